"""docker-compose.yml is the official emulator's compose file with the image swapped: the diff that
docs/container.md shows (its block marked compose-diff) is the whole difference, and the emulator
service keeps the official settings that tests/container/test_image.py starts the image with.
(No compose here: these machines have no bridge network, so the file is read, not run.)"""
from __future__ import annotations

from tests.container.harness import IMAGE, OFFICIAL_ENV, ROOT
from tests.docs.doc_blocks import blocks_of

OFFICIAL_IMAGE = '    image: "mcr.microsoft.com/azure-messaging/eventhubs-emulator:latest"'


def _diff_block() -> list[str]:
    [block] = [b for b in blocks_of("docs/container.md")
               if b.marker and "compose-diff" in b.marker[1]]
    return block.text.splitlines()


def test_the_documented_diff_is_the_whole_difference():
    compose = (ROOT / "docker-compose.yml").read_text().splitlines()
    diff = _diff_block()
    removed = [line[1:] for line in diff if line.startswith("-")]
    added = [line[1:] for line in diff if line.startswith("+")]
    assert removed[0] == OFFICIAL_IMAGE and f'    image: "{IMAGE}"' in added
    # Put the official lines back where the added ones are: the official file, 34 lines.
    at = compose.index(added[0])
    assert compose[at:at + len(added)] == added
    official = compose[:at] + removed + compose[at + len(added):]
    assert not any(line in official for line in added)
    assert len(official) == 34 and official[0] == "name: microsoft-azure-eventhubs"


def test_the_emulator_service_keeps_the_official_settings():
    text = (ROOT / "docker-compose.yml").read_text()
    emulator = text.split("\n  azurite:")[0]
    for key, value in OFFICIAL_ENV.items():
        wanted = "${ACCEPT_EULA}" if key == "ACCEPT_EULA" else value
        assert f"      {key}: {wanted}" in emulator
    assert '"${CONFIG_PATH}:/Eventhubs_Emulator/ConfigFiles/Config.json"' in emulator
    assert '"5672:5672"' in emulator and '"9092:9092"' in emulator
