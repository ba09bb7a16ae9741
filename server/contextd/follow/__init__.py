"""Following the agents people already run: live, read-only mirrors of Claude Code, Codex
and pi transcripts.

- `transcripts.py`  where each agent keeps its transcripts, and a stat-only scan of them
- `mirror.py`       one followed file: its importer fed as the file grows, and what was read
- `follower.py`     the daemon's side: the polling loop, mirror sessions written and announced
"""

from contextd.follow.follower import Follower

__all__ = ["Follower"]
