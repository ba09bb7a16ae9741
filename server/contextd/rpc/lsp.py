"""What contextd sends a client in LSP's own terms, one typed call each: the method and the
shape of its params are bound here, never written out at the call site."""

from __future__ import annotations

import asyncio
from typing import Any

from contextd.results import (
    ConfigurationItem,
    ConfigurationParams,
    MessageType,
    ProgressParams,
    ShowMessageParams,
    WorkDoneProgressCreateParams,
    WorkDoneProgressValue,
)
from contextd.rpc.connection import Connection


def show_message(connection: Connection, message: str, kind: MessageType) -> None:
    """`window/showMessage`: what the user must see."""
    connection.notify("window/showMessage", ShowMessageParams(type=kind, message=message))


def request_configuration(connection: Connection, items: list[ConfigurationItem]) -> asyncio.Future[Any]:
    """`workspace/configuration`: the client's answer holds one value per item, in order."""
    return connection.request("workspace/configuration", ConfigurationParams(items=items))


def create_progress(connection: Connection, token: str) -> asyncio.Future[Any]:
    """`window/workDoneProgress/create`: a token must exist on the client before its progress."""
    return connection.request("window/workDoneProgress/create", WorkDoneProgressCreateParams(token=token))


def report_progress(connection: Connection, token: str, value: WorkDoneProgressValue) -> None:
    """`$/progress` of a work-done token: its begin, reports and end."""
    connection.notify("$/progress", ProgressParams(token=token, value=value))
