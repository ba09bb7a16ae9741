"""A headless Python client of the contextd daemon, and the client side of the `contextd` CLI."""

from contextd import __version__

from contextd_client.client import ContextdClient, Notification, NotificationStream
from contextd_client.rpc import ConnectionLost, ContextdError
from contextd_client.sync import SyncContextdClient

__all__ = [
    "ConnectionLost",
    "ContextdClient",
    "ContextdError",
    "Notification",
    "NotificationStream",
    "SyncContextdClient",
    "__version__",
]
