"""Which settings a shared daemon keeps for itself: all but the per-connection keys."""

from contextd.model import Settings
from contextd.rpc.daemon import daemon_wide_part


def test_per_connection_keys_are_not_daemon_wide() -> None:
    mine = Settings()
    theirs = Settings.model_validate(
        {"defaultModel": "gpt-4.1", "compaction": {"hookTimeoutSeconds": 2}}
    )
    assert daemon_wide_part(theirs) == daemon_wide_part(mine)
    assert "defaultModel" not in daemon_wide_part(theirs)
    assert "hookTimeoutSeconds" not in daemon_wide_part(theirs)["compaction"]


def test_every_other_key_is_daemon_wide() -> None:
    mine = Settings()
    for change in (
        {"compaction": {"reserveTokens": 1000}},
        {"idle": {"enabled": True}},
        {"follow": {"enabled": True}},
        {"models": {"m": {"contextWindow": 1000}}},
    ):
        assert daemon_wide_part(Settings.model_validate(change)) != daemon_wide_part(mine), change
