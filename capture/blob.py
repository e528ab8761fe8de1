"""Capture files into Azure Blob storage: block blobs named as Event Hubs names
them, written with ``azure-storage-blob``, so the same code reaches Azurite
(``UseDevelopmentStorage=true`` or its connection string) and Azure.

A file is written and closed locally first (capture.writers), then uploaded
whole under its final name, overwriting: a micro-batch Spark replays after a
crash uploads the same bytes under the same names, so a job killed between
the upload and its journal leaves neither a duplicate nor a gap.
"""
from __future__ import annotations

import dataclasses
import logging
import os

from .writers import FileInfo

logger = logging.getLogger(__name__)

_clients: dict[tuple[str, str], object] = {}  # one container client per executor process


class BlobContainer:
    """One storage account's container."""

    def __init__(self, connection_string: str, container: str) -> None:
        key = (connection_string, container)
        client = _clients.get(key)
        if client is None:
            from azure.core.exceptions import ResourceExistsError
            from azure.storage.blob import BlobServiceClient

            client = BlobServiceClient.from_connection_string(connection_string).get_container_client(container)
            try:
                client.create_container()
            except ResourceExistsError:
                pass
            client = _clients[key] = client
        self.client = client

    def upload(self, info: FileInfo) -> FileInfo:
        """Upload the local file ``info`` describes, remove it, and return it
        described by its blob URL."""
        with open(info.path, "rb") as f:
            blob = self.client.upload_blob(info.name, f, blob_type="BlockBlob", overwrite=True)
        os.unlink(info.path)
        logger.debug("uploaded %s: %d bytes", blob.url, info.size_bytes)
        return dataclasses.replace(info, path=blob.url)


def is_url(path: str) -> bool:
    """Is this FileInfo path a blob's URL (not a local file)?"""
    return path.startswith(("http://", "https://"))
