"""Put on a daemon's PYTHONPATH by test_session_store: Python imports it at start-up, and it
lowers the open-file limit to CONTEXTD_TEST_NOFILE, as a small `ulimit -n` would."""

import os
import resource

_limit = os.environ.get("CONTEXTD_TEST_NOFILE")
if _limit:
    _hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (int(_limit), _hard))
