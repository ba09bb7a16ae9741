"""Deterministic coding sessions for the benchmarks, as a client would append them.

A session is a chain of turns on a made-up project (`ledger`, a personal-finance CLI):
the user asks, the assistant reads files, searches, edits, runs tests and scripts, and
answers. Tool outputs are long (source files, test runs, logs), as in real agent work.

`generate_session(seed, tokens, facts_per_kind)` also plants facts a later session must
not lose, spread evenly over the session: a user constraint in a user message, a decision
in the assistant's answer, a file edited exactly once, and an error in a traceback of a
tool result; three errors in four are fixed a few turns later (the failing test or
script then runs again with success), and the fact records which. Each fact carries
the exact string whose presence in the final context counts as "kept".

The filler is not tuned to the offline summarizer: users also say "make sure the tests
pass", the assistant also says "I'll use rg", other tests fail and get fixed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import TypeAdapter

from contextd.model import Message
from contextd.tokens import count_message

FactKind = Literal["constraint", "decision", "path", "error"]
FACT_KINDS: tuple[FactKind, ...] = ("constraint", "decision", "path", "error")
ENCODING = "o200k_base"

# --- planted facts: (the exact string checked, the sentence or output that carries it) ----

CONSTRAINTS = [
    ("never use print for logging", "Also, never use print for logging; go through the logging module."),
    ("must stay compatible with Python 3.9", "The package must stay compatible with Python 3.9, our servers still run it."),
    ("Don't add new runtime dependencies", "Don't add new runtime dependencies, the install has to stay pip-only and small."),
    ("keep the public API of ledger.core unchanged", "Please keep the public API of ledger.core unchanged, two other tools import it."),
    ("Amounts are always integer cents", "Amounts are always integer cents in storage, never floats."),
    ("use pathlib, not os.path", "In new code use pathlib, not os.path."),
    ("All timestamps must be UTC", "All timestamps must be UTC, convert at the edges only."),
    ("Tests must not touch the network", "Tests must not touch the network; mock the ECB client."),
    ("type hints on every public function", "We want type hints on every public function, mypy runs in CI."),
    ("Do not change the CSV export column order", "Do not change the CSV export column order, accountants import it into Excel."),
    ("avoid global state in the importers", "Please avoid global state in the importers; they run in parallel."),
    ("error messages in English", "User-facing error messages in English only, no translations yet."),
    ("no functions longer than 50 lines", "Code style: no functions longer than 50 lines."),
    ("Only the sync module may open sockets", "Only the sync module may open sockets."),
    ("stick to the standard library json", "For JSON stick to the standard library json, not orjson."),
]
DECISIONS = [
    ("SQLite instead of Postgres", "We'll use SQLite instead of Postgres for the local cache, since it needs no server."),
    ("parse dates with datetime.strptime", "I decided to parse dates with datetime.strptime rather than pulling in dateutil."),
    ("token bucket for the rate limiter", "Going with a token bucket for the rate limiter: it allows short bursts."),
    ("CSV importer streaming", "We'll keep the CSV importer streaming instead of loading whole files."),
    ("Decimal over float for exchange rates", "I chose Decimal over float for exchange rates to avoid rounding drift."),
    ("split ledger/core.py into accounts.py and postings.py", "The plan is to split ledger/core.py into accounts.py and postings.py."),
    ("click for the CLI instead of argparse", "Let's use click for the CLI instead of argparse, the subcommands get nested."),
    ("cache key is the sha256 of the normalized path", "From now on the cache key is the sha256 of the normalized path, so renames invalidate it."),
    ("currencies as ISO 4217 codes", "We'll store currencies as ISO 4217 codes, not symbols."),
    ("single writer thread for the database", "I opted for a single writer thread for the database to avoid lock errors."),
    ("retry failed HTTP fetches three times", "We will retry failed HTTP fetches three times with exponential backoff."),
    ("reports are rendered with Jinja2 templates", "Decision: reports are rendered with Jinja2 templates."),
    ("export format as ledger-export/2", "We'll version the export format as ledger-export/2 and keep reading /1."),
    ("pytest fixtures rather than unittest setUp", "I'll go with pytest fixtures rather than unittest setUp methods."),
    ("UUID7 for transaction ids", "We settled on UUID7 for transaction ids, they sort by time."),
]
PLANTED_PATHS = [
    "src/ledger/importers/ofx_parser.py",
    "src/ledger/rates/ecb_client.py",
    "src/ledger/storage/sqlite_cache.py",
    "src/ledger/cli/commands/reconcile.py",
    "src/ledger/reports/templates/monthly.html.j2",
    "migrations/0007_add_posted_at.sql",
    "tests/importers/test_ofx_parser.py",
    "src/ledger/core/postings.py",
    "src/ledger/util/money.py",
    "scripts/backfill_fx_history.py",
    "docs/adr/0004-sqlite-cache.md",
    "src/ledger/sync/bank_feed.py",
    "config/logging.toml",
    "src/ledger/rates/token_bucket.py",
    "src/ledger/export/v2_writer.py",
]
ERRORS = [
    "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
    "KeyError: 'currency_code'",
    "sqlite3.OperationalError: no such column: posted_at",
    "ValueError: time data '2024-13-01' does not match format '%Y-%m-%d'",
    "AttributeError: 'NoneType' object has no attribute 'account_id'",
    "decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]",
    "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
    "ZeroDivisionError: division by zero",
    "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
    "FileNotFoundError: [Errno 2] No such file or directory: 'data/rates/2024-03.csv'",
    "PermissionError: [Errno 13] Permission denied: '/var/lib/ledger/cache.db'",
    "RecursionError: maximum recursion depth exceeded while calling a Python object",
    "IndexError: list index out of range",
    "ModuleNotFoundError: No module named 'ledger.rates.ecb'",
    "OverflowError: date value out of range",
]

# --- filler vocabulary ----------------------------------------------------------------

MODULES = [
    "src/ledger/core/accounts.py", "src/ledger/core/journal.py", "src/ledger/core/balance.py",
    "src/ledger/importers/csv_importer.py", "src/ledger/importers/base.py",
    "src/ledger/importers/qif.py", "src/ledger/rates/convert.py", "src/ledger/rates/cache.py",
    "src/ledger/reports/monthly.py", "src/ledger/reports/render.py", "src/ledger/cli/main.py",
    "src/ledger/cli/commands/import_cmd.py", "src/ledger/storage/db.py",
    "src/ledger/storage/schema.py", "src/ledger/sync/client.py", "src/ledger/config.py",
    "src/ledger/util/dates.py", "src/ledger/util/text.py",
]
TESTS = [
    "tests/test_accounts.py", "tests/test_journal.py", "tests/test_balance.py",
    "tests/importers/test_csv.py", "tests/test_rates.py", "tests/test_reports.py",
    "tests/test_cli.py", "tests/test_storage.py",
]
SCRIPTS = ["scripts/migrate.py", "scripts/backfill_rates.py", "scripts/rebuild_index.py", "scripts/export_year.py"]
FAILING_SCRIPTS = ["scripts/sync_bank_feed.py", "scripts/reconcile_all.py", "scripts/import_ofx.py",
                   "scripts/tax_report.py", "scripts/check_rates.py", "scripts/rebuild_cache.py",
                   "scripts/seed_demo.py", "scripts/verify_backups.py"]
"""One per planted script error, never run by the filler: only its own fix re-runs it."""
NOUNS = ["amount", "posting", "account", "rate", "currency", "entry", "batch", "row", "report",
         "period", "balance", "payee", "memo", "ledger", "journal", "cache", "record", "total"]
VERBS = ["parse", "load", "normalize", "convert", "validate", "render", "apply", "merge",
         "split", "fetch", "store", "compute", "format", "resolve", "group", "sum"]
USER_ASKS = [
    "The monthly report shows the wrong totals for {noun}s in March, can you find out why?",
    "Importing the bank CSV takes forever on big files. Can you look at {path}?",
    "Add a --dry-run flag to the import command.",
    "Can you check how {func} handles an empty {noun}?",
    "Refactor {path} a bit, it has grown too big.",
    "The reconcile command crashes on accounts without a {noun}. Fix it please.",
    "Write tests for {func}.",
    "Why is {func} called twice per {noun}?",
    "Rename {func} to something clearer and update the callers.",
    "Let's support QIF files in the importer too.",
    "The exchange rates fetch is slow, take a look.",
    "Clean up the error handling in {path}.",
]
USER_FOLLOW_UPS = [
    "ok, go ahead", "Looks good. Continue.", "Make sure the existing tests keep passing.",
    "yes", "Hmm, that doesn't look right, check it again.", "Fine, but keep it simple.",
    "Nice. What's next?", "Can you also update the docstring?", "Should we add a test for that?",
]
STEP_LINES = [
    "Let me look at {path} first.", "I'll use rg to find every caller of {func}.",
    "Reading the test to see what it expects.", "Now I'll update {func}.",
    "Running the tests for this part.", "Let me check the schema.",
    "I will use the existing helper instead of writing a new one.",
    "This should only affect {path}.", "Checking the other importers for the same pattern.",
]
ANSWERS = [
    "The problem was in {func}: it summed the {noun}s before converting them. I fixed it and the tests pass.",
    "I updated {path} so that {func} skips empty {noun}s, and added a test for it.",
    "Done. {func} now returns early for a missing {noun}; the rest of the module is unchanged.",
    "I looked into it: {func} is called once per {noun} and once more by the report cache. That second call is cheap, so I left it.",
    "The refactor is finished: {func} moved into its own function and {path} got shorter.",
    "All tests pass now. Next I'd look at how the {noun} cache is invalidated.",
]
NEXT_STEP_LISTS = [
    ["update the changelog", "run the full test suite", "check the {noun} report by hand"],
    ["add a test for an empty {noun}", "look at {func} performance"],
]


@dataclass(frozen=True)
class PlantedFact:
    kind: FactKind
    text: str
    """The exact string that must be in the final context for the fact to count as kept."""
    message_index: int
    fixed: bool | None = None
    """For an error: whether a later run of the same command succeeded."""


@dataclass
class GeneratedSession:
    messages: list[dict[str, Any]] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    """Counted tokens of each message (o200k_base), as the daemon counts them."""
    facts: list[PlantedFact] = field(default_factory=list)

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens)


_MESSAGE = TypeAdapter(Message)


def message_tokens(message: dict[str, Any]) -> int:
    return count_message(_MESSAGE.validate_python(message), ENCODING)


class Writer:
    """Builds turns of messages with a seeded random source; ids are sequential."""

    def __init__(self, seed: int, call_prefix: str = "call") -> None:
        self.random = random.Random(seed)
        self.call_prefix = call_prefix
        self.messages: list[dict[str, Any]] = []
        self.calls = 0
        self.fixes_due: list[tuple[int, str]] = []
        """(turns from now, command) of failures that a later turn fixes and runs again."""

    # --- words ---------------------------------------------------------------------

    def func(self) -> str:
        return f"{self.random.choice(VERBS)}_{self.random.choice(NOUNS)}"

    def fill(self, template: str, path: str | None = None) -> str:
        return template.format(
            noun=self.random.choice(NOUNS),
            func=f"`{self.func()}`",
            path=path or self.random.choice(MODULES),
        )

    def price(self) -> str:
        return f"{self.random.randint(1, 999)}.{self.random.randint(0, 99):02d}"

    def code(self, lines: int) -> str:
        out = ["from __future__ import annotations", "", "import logging", "from decimal import Decimal", ""]
        while len(out) < lines:
            name, arg = self.func(), self.random.choice(NOUNS)
            out += [f"def {name}({arg}: {arg.title()}, *, strict: bool = False) -> Decimal:",
                    f'    """{self.random.choice(VERBS).title()} the {arg} for the {self.random.choice(NOUNS)} report."""']
            for _ in range(self.random.randint(3, 12)):
                other = self.random.choice(NOUNS)
                out.append(self.random.choice([
                    f"    {other} = {self.func()}({arg}.{self.random.choice(NOUNS)})",
                    f"    if {other} is None and strict:",
                    f"        raise ValueError(f\"missing {other} for {{{arg}.id}}\")",
                    f"    for item in {arg}.{other}s:",
                    f"        total += item.{self.random.choice(NOUNS)} * Decimal(\"{self.price()}\")",
                    f"    log.debug(\"{self.random.choice(VERBS)} %s\", {other})",
                    "    try:",
                    f"        return {self.func()}({other})",
                    "    except KeyError:",
                    f"        return Decimal({self.random.randint(0, 9)})",
                ]))
            out += ["    return total", ""]
        return "\n".join(out[:lines])

    # --- messages ------------------------------------------------------------------

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def assistant(self, text: str, call: tuple[str, dict[str, Any]] | None = None) -> str | None:
        content: list[dict[str, Any]] = []
        if self.random.random() < 0.3:
            thinking = " ".join(self.fill(line) for line in self.random.sample(STEP_LINES, 3))
            content.append({"type": "thinking", "thinking": thinking})
        if text:
            content.append({"type": "text", "text": text})
        call_id = None
        if call is not None:
            self.calls += 1
            call_id = f"{self.call_prefix}_{self.calls}"
            content.append({"type": "toolCall", "id": call_id, "name": call[0], "arguments": call[1]})
        self.messages.append({"role": "assistant", "content": content, "stopReason": "toolUse" if call else "stop"})
        return call_id

    def tool(self, name: str, arguments: dict[str, Any], output: str, *, error: bool = False, text: str = "") -> None:
        call_id = self.assistant(text or self.fill(self.random.choice(STEP_LINES), arguments.get("path")), (name, arguments))
        assert call_id is not None
        self.messages.append({"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": output, "isError": error})

    # --- tool steps ----------------------------------------------------------------

    def read(self, path: str | None = None) -> None:
        path = path or self.random.choice(MODULES + TESTS)
        lines = min(400, int(self.random.paretovariate(1.6) * 40))
        self.tool("read", {"path": path}, self.code(lines))

    def grep(self) -> None:
        func = self.func()
        hits = "\n".join(self.search_hit(func) for _ in range(self.random.randint(2, 25)))
        self.tool("bash", {"command": f'rg -n "{func}" src tests'}, hits)

    def search_hit(self, func: str) -> str:
        where = f"{self.random.choice(MODULES)}:{self.random.randint(5, 400)}"
        return f"{where}:    {self.random.choice(NOUNS)} = {func}({self.random.choice(NOUNS)})"

    def log_line(self, index: int) -> str:
        day = f"2024-05-0{self.random.randint(1, 9)} 10:{index:02d}:00"
        return f"{day} INFO {self.random.choice(VERBS)} {self.random.choice(NOUNS)} batch {index}"

    def edit(self, path: str | None = None, text: str = "") -> None:
        path = path or self.random.choice(MODULES + TESTS)
        old, new = self.code(self.random.randint(3, 15)), self.code(self.random.randint(3, 20))
        self.tool("edit", {"path": path, "old_string": old, "new_string": new},
                  f"Edited {path}: 1 replacement.", text=text)

    def test_run(self, failure: str | None = None, test: str | None = None) -> str:
        """Runs a test file (passing unless `failure` is given); returns the command."""
        test = test or self.random.choice(TESTS)
        count = self.random.randint(5, 60)
        dots = "".join(self.random.choice("....s") for _ in range(count))
        command = f"python -m pytest {test} -q"
        if failure is None:
            self.tool("bash", {"command": command},
                      f"{dots}{' ' * 10}[100%]\n{count} passed in {self.random.uniform(0.1, 3):.2f}s")
            return command
        name = f"test_{self.func()}"
        module = self.random.choice(MODULES)
        exception = failure.split(":")[0].rsplit(".", 1)[-1]
        output = "\n".join([
            f"{dots[:-1]}F{' ' * 10}[100%]",
            "=================================== FAILURES ===================================",
            f"_______________________________ {name} _______________________________",
            "",
            f"    def {name}():",
            f">       result = {self.func()}(make_{self.random.choice(NOUNS)}())",
            "",
            f"{test}:{self.random.randint(10, 300)}: ",
            "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _",
            f"{module}:{self.random.randint(10, 300)}: in {self.func()}",
            f"    return {self.func()}({self.random.choice(NOUNS)})",
            f"E   {failure}",
            "",
            f"{module}:{self.random.randint(10, 300)}: {exception}",
            "=========================== short test summary info ============================",
            f"FAILED {test}::{name} - {failure}",
            f"1 failed, {count - 1} passed in {self.random.uniform(0.1, 3):.2f}s",
        ])
        self.tool("bash", {"command": command}, output, error=True)
        return command

    def script_run(self, failure: str | None = None, script: str | None = None) -> str:
        """Runs a script (succeeding unless `failure` is given); returns the command."""
        script = script or self.random.choice(SCRIPTS)
        command = f"python {script} --since 2024-01-01"
        log_lines = [self.log_line(index) for index in range(self.random.randint(3, 30))]
        if failure is None:
            self.tool("bash", {"command": command}, "\n".join([*log_lines, "done."]))
            return command
        frames = [f'  File "/home/dev/ledger/{script}", line {self.random.randint(20, 200)}, in <module>', "    main()"]
        for _ in range(self.random.randint(1, 4)):
            module, line = self.random.choice(MODULES), self.random.randint(5, 400)
            frames += [f'  File "/home/dev/ledger/{module}", line {line}, in {self.func()}',
                       f"    return {self.func()}({self.random.choice(NOUNS)})"]
        output = "\n".join([*log_lines, "Traceback (most recent call last):", *frames, failure])
        self.tool("bash", {"command": command}, output, error=True)
        return command

    def rerun(self, command: str) -> None:
        """The same command again, now succeeding."""
        if "pytest" in command:
            self.test_run(test=command.split()[3])
        else:
            self.script_run(script=command.split()[1])

    def filler_step(self) -> None:
        roll = self.random.random()
        if roll < 0.35:
            self.read()
        elif roll < 0.5:
            self.grep()
        elif roll < 0.75:
            self.edit()
        elif roll < 0.92:
            failing = self.random.random() < 0.1
            failure = f"assert {self.random.randint(1, 99)} == {self.random.randint(100, 199)}" if failing else None
            self.test_run(f"AssertionError: {failure}" if failure else None)
        else:
            self.script_run()

    # --- turns ---------------------------------------------------------------------

    def turn(self, fact: tuple[FactKind, int] | None = None) -> PlantedFact | None:
        """One turn; with `fact`, the turn carries that planted fact and returns it."""
        ask = self.fill(self.random.choice(USER_ASKS))
        if self.random.random() < 0.3 and self.messages:
            ask = self.random.choice(USER_FOLLOW_UPS)
        planted: PlantedFact | None = None
        if fact and fact[0] == "constraint":
            check, sentence = CONSTRAINTS[fact[1]]
            ask = f"{ask} {sentence}"
        self.user(ask)
        if fact and fact[0] == "constraint":
            planted = PlantedFact("constraint", check, len(self.messages) - 1)
        steps = self.random.randint(2, 7)
        special_at = self.random.randrange(steps)
        for step in range(steps):
            if step == special_at and fact and fact[0] == "path":
                path = PLANTED_PATHS[fact[1]]
                self.read(path)
                self.edit(path, text=f"Now editing {path}.")
                planted = PlantedFact("path", path, len(self.messages) - 2)
            elif step == special_at and fact and fact[0] == "error":
                error = ERRORS[fact[1]]
                if fact[1] % 2 == 0:
                    command = self.test_run(error)
                else:
                    command = self.script_run(error, FAILING_SCRIPTS[fact[1] // 2])
                fixed = fact[1] % 4 != 3  # every test failure and half of the script failures
                if fixed:
                    self.fixes_due.append((self.random.randint(2, 5), command))
                planted = PlantedFact("error", error, len(self.messages) - 1, fixed)
            else:
                self.filler_step()
        self.run_due_fixes()
        answer = self.fill(self.random.choice(ANSWERS))
        if fact and fact[0] == "decision":
            check, sentence = DECISIONS[fact[1]]
            answer = f"{sentence} {answer}"
        if self.random.random() < 0.3:
            items = self.random.choice(NEXT_STEP_LISTS)
            answer += "\n\nNext steps:\n" + "\n".join(f"- {self.fill(item)}" for item in items)
        self.assistant(answer)
        if fact and fact[0] == "decision":
            planted = PlantedFact("decision", check, len(self.messages) - 1)
        return planted

    def run_due_fixes(self) -> None:
        due = [(turns - 1, command) for turns, command in self.fixes_due]
        self.fixes_due = [(turns, command) for turns, command in due if turns > 0]
        for turns, command in due:
            if turns == 0:
                self.edit(text="Fixing the failure from the earlier run.")
                self.rerun(command)


def generate_session(seed: int, tokens: int, facts_per_kind: int) -> GeneratedSession:
    """About `tokens` tokens of turns with `facts_per_kind` facts of each kind planted at
    evenly spaced points (the kinds interleaved in a seeded order); turns go on past
    `tokens` until every fact is planted and every fix made."""
    if facts_per_kind > min(len(CONSTRAINTS), len(DECISIONS), len(PLANTED_PATHS), len(ERRORS)):
        raise ValueError(f"at most {len(CONSTRAINTS)} facts per kind")
    assert all(check in sentence for check, sentence in CONSTRAINTS + DECISIONS)
    writer = Writer(seed)
    plan: list[tuple[FactKind, int]] = []
    for index in range(facts_per_kind):
        kinds = list(FACT_KINDS)
        writer.random.shuffle(kinds)
        plan += [(kind, index) for kind in kinds]
    session = GeneratedSession()
    next_fact = 0
    while session.total_tokens < tokens or next_fact < len(plan) or writer.fixes_due:
        fact = None
        due_at = tokens * (next_fact + 0.5) / len(plan) if next_fact < len(plan) else None
        if due_at is not None and session.total_tokens >= due_at:
            fact = plan[next_fact]
            next_fact += 1
        planted = writer.turn(fact)
        if planted is not None:
            session.facts.append(planted)
        new = writer.messages[len(session.messages):]
        session.messages += new
        session.tokens += [message_tokens(m) for m in new]
    return session


def filler_turns(seed: int) -> Iterator[list[dict[str, Any]]]:
    """Endless filler turns, each a list of messages that leaves no tool call open; tool
    call ids are unique to the seed."""
    writer = Writer(seed, call_prefix=f"call{seed}")
    while True:
        start = len(writer.messages)
        writer.turn()
        yield writer.messages[start:]
