"""What a KIP-848 member's subscription stands for: its topic names, and a regular
expression (``SubscribedTopicRegex``) matched against the whole name of every topic.

The regex is re-resolved on each of the member's heartbeats, so topics created later
join the subscription. Kafka compiles it with RE2J; here it is RE2 (google-re2): the
same syntax, and linear time, so no client regex can stall the event loop with
backtracking.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import re2

from kafka_wire.coordinator.consumer_group import ConsumerGroupMember

__all__ = ["INVALID_REGULAR_EXPRESSION", "TopicRegexes", "regex_error"]

INVALID_REGULAR_EXPRESSION = 128  # not in kafka-python's error table
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a client's bad regex is answered, not logged to stderr by RE2
_CACHED_MAX = 1024


def regex_error(exc: re2.error) -> str:
    """RE2's reason for refusing a regex, as text."""
    return exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(
        exc.args[0], bytes) else str(exc)


class TopicRegexes:
    """Compiled subscription regexes (a bounded cache) and the topics they select."""

    def __init__(self, list_topics: Callable[[], Iterable[str]]) -> None:
        self.list_topics = list_topics
        self._patterns: dict[str, Any] = {}

    def compile(self, regex: str):
        """The compiled ``regex``; re2.error if it is not valid."""
        pattern = self._patterns.get(regex)
        if pattern is None:
            if len(self._patterns) > _CACHED_MAX:
                self._patterns.clear()
            pattern = self._patterns[regex] = re2.compile(regex, _RE2_OPTIONS)
        return pattern

    def resolve(self, member: ConsumerGroupMember,
                visible: Callable[[str], bool] | None = None) -> list[str]:
        """The topics a member's names and regex stand for now (a regex matches
        only topics the member may see)."""
        if member.subscribed_regex is None:
            return member.subscribed_names
        match = self.compile(member.subscribed_regex).fullmatch
        topics = set(member.subscribed_names)
        topics.update(t for t in self.list_topics()
                      if match(t) and (visible is None or visible(t)))
        return sorted(topics)
