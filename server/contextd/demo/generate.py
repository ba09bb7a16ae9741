"""Generate the demo's long coding session, deterministically: `python -m contextd.demo.generate`.

The session is an agent working through a backlog of bugs and features in a small Python
bookkeeping project, `ledger`: it searches, reads files (which change as it edits them),
runs the tests, reads the failures, fixes them and reports. Messages carry no provider
usage, so the daemon counts every token itself. The output, `session.jsonl` next to this
file, is committed; regenerate it after changing this script.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEED = 20251004
OUTPUT = Path(__file__).with_name("session.jsonl")

MODULES = {
    "ledger/models.py": ("Account", "Entry", "Journal", "Posting", "Period"),
    "ledger/parser.py": ("Token", "Lexer", "EntryParser", "DateField", "AmountField"),
    "ledger/currency.py": ("Money", "Rate", "RateTable", "Rounding", "Converter"),
    "ledger/report.py": ("Balance", "TrialBalance", "IncomeStatement", "Column", "Formatter"),
    "ledger/storage.py": ("Store", "Snapshot", "Migration", "Index", "Lock"),
    "ledger/importers.py": ("CsvImporter", "OfxImporter", "Mapping", "Dedupe", "Row"),
}

VERBS = ("load", "validate", "apply", "merge", "split", "render", "compute", "normalize", "resolve", "close")
NOUNS = ("balance", "posting", "period", "rate", "amount", "account", "entry", "column", "row", "total")


@dataclass
class Task:
    prompt: str
    module: str
    function: str
    buggy: str
    fixed: str
    error: str
    second_error: str | None
    follow_up: str | None


TASKS = [
    Task("Monthly balances are off by one day at month end. Can you find out why and fix it?",
         "ledger/models.py", "closing_date", "return period.end - timedelta(days=1)", "return period.end",
         "AssertionError: assert datetime.date(2025, 1, 30) == datetime.date(2025, 1, 31)", None,
         "Please also add a regression test for February in a leap year."),
    Task("Importing a CSV with a UTF-8 BOM fails on the first column name. Fix the CSV importer.",
         "ledger/importers.py", "read_header", "header = next(reader)", "header = [name.lstrip('\\ufeff') for name in next(reader)]",
         "KeyError: 'date'", "AssertionError: assert '\\ufeffdate' == 'date'", None),
    Task("Currency conversion rounds half-cents the wrong way for EUR. It should use banker's rounding.",
         "ledger/currency.py", "round_amount", "return amount.quantize(CENT, rounding=ROUND_HALF_UP)",
         "return amount.quantize(CENT, rounding=ROUND_HALF_EVEN)",
         "AssertionError: assert Decimal('10.13') == Decimal('10.12')", None, None),
    Task("The trial balance report crashes when an account has no postings in the period.",
         "ledger/report.py", "account_total", "return sum(p.amount for p in postings) / len(postings)",
         "return sum((p.amount for p in postings), Decimal(0))",
         "ZeroDivisionError: division by zero", None, "Also show accounts with a zero balance as '-' instead of 0.00."),
    Task("Saving a journal while another process reads it sometimes corrupts the file. Make writes atomic.",
         "ledger/storage.py", "write_snapshot", "path.write_text(data)",
         "tmp = path.with_suffix('.tmp')\n        tmp.write_text(data)\n        os.replace(tmp, path)",
         "AssertionError: snapshot truncated: expected 4096 bytes, read 1024", "NameError: name 'os' is not defined", None),
    Task("Dates like 2025-3-7 (no zero padding) are rejected by the parser. Accept them.",
         "ledger/parser.py", "parse_date", "return datetime.strptime(text, '%Y-%m-%d').date()",
         "year, month, day = (int(part) for part in text.split('-'))\n        return date(year, month, day)",
         "ValueError: time data '2025-3-7' does not match format '%Y-%m-%d'", None, None),
    Task("Duplicate detection in the OFX importer misses transactions that differ only in memo whitespace.",
         "ledger/importers.py", "fingerprint", "return (row.date, row.amount, row.memo)",
         "return (row.date, row.amount, ' '.join(row.memo.split()))",
         "AssertionError: assert 2 == 1", None, None),
    Task("Rates older than 7 days should not be used for conversion; right now any rate is accepted.",
         "ledger/currency.py", "rate_for", "return table.latest(pair)",
         "rate = table.latest(pair)\n        if on - rate.day > MAX_RATE_AGE:\n            raise StaleRate(pair, rate.day)\n        return rate",
         "Failed: DID NOT RAISE <class 'ledger.currency.StaleRate'>", "NameError: name 'MAX_RATE_AGE' is not defined",
         "Make the maximum age configurable through the settings file."),
    Task("The income statement puts refunds under expenses instead of reducing income.",
         "ledger/report.py", "classify", "return 'expense' if posting.amount < 0 else 'income'",
         "if posting.account.kind == 'income':\n            return 'income'\n        return 'expense' if posting.amount < 0 else 'income'",
         "AssertionError: assert Decimal('-40.00') == Decimal('0.00')", None, None),
    Task("Migrations run twice when two processes start at the same time. Guard them with the lock.",
         "ledger/storage.py", "migrate", "for migration in pending(store):",
         "with store.lock():\n            for migration in pending(store):",
         "AssertionError: migration 0007 applied 2 times", None, None),
    Task("Account names with a colon at the end create an empty sub-account. Reject them with a clear error.",
         "ledger/models.py", "split_name", "return name.split(':')",
         "parts = name.split(':')\n        if not all(parts):\n            raise InvalidAccount(name)\n        return parts",
         "Failed: DID NOT RAISE <class 'ledger.models.InvalidAccount'>", None, None),
    Task("Amounts written as '1,234.50' fail to parse. Support thousands separators.",
         "ledger/parser.py", "parse_amount", "return Decimal(text)",
         "return Decimal(text.replace(',', ''))",
         "decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]", None,
         "What about European formats like '1.234,50'? Handle those when the locale says so."),
    Task("The balance column in reports is misaligned when amounts are negative.",
         "ledger/report.py", "format_amount", "return f'{amount:.2f}'.rjust(width - 1)",
         "return f'{amount:>{width}.2f}'",
         "AssertionError: assert '   -12.00' == '    -12.00'", None, None),
    Task("Closing a period should refuse if the journal does not balance. Today it silently closes.",
         "ledger/models.py", "close_period", "period.closed = True",
         "if journal.imbalance(period):\n            raise Unbalanced(period, journal.imbalance(period))\n        period.closed = True",
         "Failed: DID NOT RAISE <class 'ledger.models.Unbalanced'>", "AttributeError: 'Journal' object has no attribute 'imbalance'", None),
    Task("The index gets stale after a snapshot restore; lookups return entries that no longer exist.",
         "ledger/storage.py", "restore", "self.snapshot = snapshot",
         "self.snapshot = snapshot\n        self.index.rebuild(snapshot.entries)",
         "AssertionError: assert <Entry 2025-02-01 rent> is None", None, None),
    Task("Converting between two non-base currencies goes through the base twice and loses precision.",
         "ledger/currency.py", "convert", "return self.to_base(money).to(target)",
         "return Money(money.amount * self.cross_rate(money.currency, target), target)",
         "AssertionError: assert Decimal('91.08') == Decimal('91.09')", "AttributeError: 'Converter' object has no attribute 'cross_rate'", None),
    Task("Lexer error messages show the wrong column for tabs. Count a tab as advancing to the next multiple of 8.",
         "ledger/parser.py", "column_of", "return offset - line_start + 1",
         "return len(text[line_start:offset].expandtabs(8)) + 1",
         "AssertionError: assert 'line 3, column 5' == 'line 3, column 17'", None, None),
    Task("CSV mappings should allow a constant value for a column, e.g. a fixed currency.",
         "ledger/importers.py", "mapped_value", "return row[mapping.column]",
         "if mapping.constant is not None:\n            return mapping.constant\n        return row[mapping.column]",
         "KeyError: 'currency'", None, "Document the new option in the README."),
    Task("Posting amounts with more than two decimals are silently truncated. Keep full precision until rounding at report time.",
         "ledger/models.py", "add_posting", "amount = amount.quantize(CENT)",
         "amount = Decimal(amount)",
         "AssertionError: assert Decimal('0.33') == Decimal('0.333')", None, None),
    Task("Reports should be able to group by month. Add a --by-month option to the balance report.",
         "ledger/report.py", "group_rows", "return [rows]",
         "if not self.by_month:\n            return [rows]\n        return [list(group) for _, group in groupby(rows, key=lambda row: row.day.replace(day=1))]",
         "AssertionError: assert 1 == 3", "NameError: name 'groupby' is not defined", None),
]


class Project:
    """The files of the project, which change as the agent edits them."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.files: dict[str, list[str]] = {}
        for path, classes in MODULES.items():
            self.files[path] = self._module(path, classes)
            self.files[test_path(path)] = self._tests(path, classes)

    def _module(self, path: str, classes: tuple[str, ...]) -> list[str]:
        name = path.split("/")[1].removesuffix(".py")
        lines = [
            f'"""{name.capitalize()} of the ledger: {", ".join(classes[:3]).lower()} and friends."""',
            "",
            "from __future__ import annotations",
            "",
            "import logging",
            "from dataclasses import dataclass, field",
            "from datetime import date, datetime, timedelta",
            "from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal",
            "",
            "log = logging.getLogger(__name__)",
            "CENT = Decimal('0.01')",
            "",
        ]
        task_functions = [task for task in TASKS if task.module == path]
        for index, cls in enumerate(classes):
            lines += ["", "@dataclass", f"class {cls}:", f'    """One {cls.lower()} as the ledger keeps it."""', ""]
            for attribute in self.rng.sample(NOUNS, 3):
                lines.append(f"    {attribute}: object = None")
            for _ in range(self.rng.randint(3, 5)):
                lines += self._method()
            if index < len(task_functions):
                task = task_functions[index]
                lines += [
                    "",
                    f"    def {task.function}(self, *args, **kwargs):",
                    f'        """{task.prompt.split(".")[0]}."""',
                    *[f"        {line}" for line in task.buggy.split("\n")],
                ]
        return lines

    def _method(self) -> list[str]:
        verb, noun = self.rng.choice(VERBS), self.rng.choice(NOUNS)
        other = self.rng.choice(NOUNS)
        return [
            "",
            f"    def {verb}_{noun}(self, {other}):",
            f'        """{verb.capitalize()} the {noun} from a {other}."""',
            f"        if {other} is None:",
            f"            raise ValueError('{verb}_{noun} needs a {other}')",
            f"        result = self.{noun} if self.{noun} is not None else {other}",
            f"        log.debug('{verb} %s -> %s', {other}, result)",
            "        return result",
        ]

    def _tests(self, path: str, classes: tuple[str, ...]) -> list[str]:
        module = path.removesuffix(".py").replace("/", ".")
        lines = [f"from {module} import {', '.join(classes)}", "import pytest", ""]
        for cls in classes:
            for _ in range(self.rng.randint(2, 3)):
                verb, noun = self.rng.choice(VERBS), self.rng.choice(NOUNS)
                lines += [
                    "",
                    f"def test_{cls.lower()}_{verb}_{noun}():",
                    f"    item = {cls}({noun}={self.rng.randint(1, 999)})",
                    f"    assert item.{verb}_{noun}({self.rng.randint(1, 99)}) == {self.rng.randint(1, 999)}",
                ]
        return lines

    def read(self, path: str) -> str:
        return "\n".join(f"{number:6}\t{line}" for number, line in enumerate(self.files[path], start=1))

    def edit(self, path: str, old: str, new: str) -> None:
        text = "\n".join(self.files[path])
        indented_old = "\n        ".join(old.split("\n"))
        self.files[path] = text.replace(indented_old, new, 1).split("\n")

    def grep(self, word: str) -> str:
        hits = [
            f"{path}:{number}:{line.strip()}"
            for path, lines in self.files.items()
            for number, line in enumerate(lines, start=1)
            if word in line
        ]
        return "\n".join(hits[:20]) or "(no matches)"


def test_path(path: str) -> str:
    return "tests/test_" + path.split("/")[1]


class Session:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.messages: list[dict[str, Any]] = []
        self.calls = 0
        self.test_count = 148

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"})

    def tool(self, name: str, arguments: dict[str, Any], result: str, *, text: str | None = None,
             thinking: str | None = None, error: bool = False) -> None:
        self.calls += 1
        call_id = f"call_{self.calls:04d}"
        content: list[dict[str, Any]] = []
        if thinking:
            content.append({"type": "thinking", "thinking": thinking})
        if text:
            content.append({"type": "text", "text": text})
        content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
        self.messages.append({"role": "assistant", "content": content, "stopReason": "toolUse"})
        self.messages.append(
            {"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": result, "isError": error}
        )


def pytest_failure(test_file: str, function: str, error: str, rng: random.Random) -> str:
    passed = rng.randint(8, 20)
    frames = "\n".join(
        f"    {rng.choice(VERBS)}_{rng.choice(NOUNS)}(item)\n{test_file}:{rng.randint(10, 90)}: in test_{function}"
        for _ in range(rng.randint(2, 4))
    )
    return (
        f"============================= test session starts ==============================\n"
        f"collected {passed + 1} items\n\n{test_file} {'.' * (passed // 2)}F{'.' * (passed - passed // 2)}\n\n"
        f"=================================== FAILURES ===================================\n"
        f"_____________________________ test_{function} _____________________________\n\n"
        f"{frames}\n>       assert result == expected\nE       {error}\n\n"
        f"=========================== short test summary info ============================\n"
        f"FAILED {test_file}::test_{function} - {error.split(':')[0]}\n"
        f"========================= 1 failed, {passed} passed in {rng.uniform(0.2, 1.9):.2f}s ========================="
    )


def pytest_pass(count: int, rng: random.Random) -> str:
    dots = "".join(rng.choice("......") for _ in range(min(count, 60)))
    return f"{dots}\n{count} passed in {rng.uniform(1.5, 6.0):.2f}s"


def diff(task: Task) -> str:
    removed = "\n".join(f"-        {line}" for line in task.buggy.split("\n"))
    added = "\n".join(f"+        {line}" for line in task.fixed.split("\n"))
    return (
        f" {task.module} | {len(task.fixed.splitlines()) + len(task.buggy.splitlines())} "
        f"{'+' * len(task.fixed.splitlines())}{'-' * len(task.buggy.splitlines())}\n"
        f" 1 file changed\n"
        f"diff --git a/{task.module} b/{task.module}\n--- a/{task.module}\n+++ b/{task.module}\n"
        f"@@ def {task.function}(self, *args, **kwargs):\n{removed}\n{added}"
    )


def work_on(task: Task, project: Project, session: Session, rng: random.Random) -> None:
    tests = test_path(task.module)
    session.user(task.prompt)
    session.tool("grep", {"pattern": task.function, "path": "ledger"}, project.grep(task.function),
                 text=f"Let me find where `{task.function}` lives.")
    session.tool("read", {"path": task.module}, project.read(task.module))
    session.tool("read", {"path": tests}, project.read(tests),
                 text=f"`{task.function}` is in {task.module}. Let me check how the tests exercise it.")
    if rng.random() < 0.5:
        other = rng.choice([path for path in MODULES if path != task.module])
        session.tool("read", {"path": other}, project.read(other),
                     text=f"The tests build their fixtures through {other}; checking it as well.")
    session.tool("bash", {"command": f"python -m pytest {tests} -q"},
                 pytest_failure(tests, task.function, task.error, rng), error=True,
                 thinking=f"Write a failing test for the report first, then run it to see the actual behaviour of {task.function}.")
    session.tool("edit", {"path": task.module, "oldText": task.buggy, "newText": task.fixed}, f"Edited {task.module}.",
                 text=f"The failure confirms it: `{task.buggy.splitlines()[0].strip()}` is the culprit. Fixing it.")
    project.edit(task.module, task.buggy, task.fixed)
    if task.second_error:
        session.tool("bash", {"command": f"python -m pytest {tests} -q"},
                     pytest_failure(tests, task.function, task.second_error, rng), error=True)
        session.tool("read", {"path": task.module}, project.read(task.module),
                     text="Another failure from my change. Let me look at the module header.")
        session.tool("edit", {"path": task.module, "oldText": "import logging", "newText": "import logging\nimport os\nfrom itertools import groupby"},
                     f"Edited {task.module}.", text="A missing name at module level; adding the import.")
        project.edit(task.module, "import logging", "import logging\nimport os\nfrom itertools import groupby")
    session.test_count += 1
    session.tool("bash", {"command": f"python -m pytest {tests} -q"}, pytest_pass(rng.randint(9, 21), rng))
    session.tool("bash", {"command": "python -m pytest -q"}, pytest_pass(session.test_count, rng),
                 text="That file passes. Running the whole suite to be sure nothing else broke.")
    session.tool("bash", {"command": "git diff --stat && git diff"}, diff(task),
                 text="Reviewing the diff before reporting.")
    session.tool("bash", {"command": f"git commit -qam 'Fix {task.function}' && git log --oneline -1"},
                 f"{rng.getrandbits(28):07x} Fix {task.function}")
    session.say(f"Fixed `{task.function}` in {task.module}: it now does `{task.fixed.splitlines()[0].strip()}` "
                f"instead of `{task.buggy.splitlines()[0].strip()}`. All {session.test_count} tests pass.")
    if task.follow_up:
        session.user(task.follow_up)
        body = "\n".join(f"    {line}" for line in task.fixed.split("\n"))
        new_test = f"def test_{task.function}_follow_up():\n{body}\n"
        session.tool("write", {"path": f"tests/test_{task.function}_follow_up.py", "content": new_test},
                     f"Wrote tests/test_{task.function}_follow_up.py", text="Adding that now, with a test.")
        session.test_count += 1
        session.tool("bash", {"command": "python -m pytest -q"}, pytest_pass(session.test_count, rng))
        session.say(f"Done. The follow-up is covered by tests/test_{task.function}_follow_up.py; {session.test_count} tests pass.")


def generate() -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    project = Project(rng)
    session = Session(rng)
    session.user("You are working in the `ledger` repository. I'll give you a backlog of issues, one at a time. "
                 "Keep changes small, run the tests after each change, and tell me what you changed.")
    session.say("Understood. I'll take the issues one by one, keep each change minimal and run the tests every time.")
    for task in TASKS:
        work_on(task, project, session, rng)
    return session.messages


def main() -> None:
    messages = generate()
    with OUTPUT.open("w", encoding="utf-8") as out:
        for message in messages:
            out.write(json.dumps(message, ensure_ascii=False) + "\n")
    print(f"{OUTPUT}: {len(messages)} messages, {OUTPUT.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
