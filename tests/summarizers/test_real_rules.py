"""One test per rule of the offline summary, each on an excerpt of a real transcript.

The excerpts are copied from tests/fixtures/real (the transcript is named at each test),
shortened to the messages the rule is about. The debugger-noise and FAIL-in-a-success
cases come from sessions that are reserved for evaluation, so they are rebuilt from the
shapes those sessions had.
"""

from __future__ import annotations

import json
import re

from contextd.compaction.provenance import trace_sources
from contextd.summarizers.base import SummaryRequest
from contextd.summarizers.offline import summarize_offline
from contextd.summarizers.outcomes import read_output, verdict
from contextd.summarizers.trail import artifact_trail

from tests.summarizers.excerpts import MESSAGES, call, result, said, sections, summary_of, user


def test_a_search_with_no_match_is_an_answer_not_a_failure() -> None:
    # codex-knearme-compacted, L207-L208: rg found nothing, Codex reports exit code 1.
    summary = summary_of([
        user("Review .agent/System/project_architecture.md for any missing integrations or data models."),
        said("", call("a", "rg -n \"drizzle|prisma\" rank-tracking/local-beacon/packages/database -g '!**/node_modules/**'")),
        result("a", "Exit code: 1\nWall time: 0 seconds\nOutput:\n"),
    ])

    assert sections(summary)["### Blocked"] == "(none)"
    assert "rank-tracking/local-beacon" not in sections(summary)["## Critical Context"]


def test_the_exit_code_decides_not_the_error_flag() -> None:
    # codex-knearme-two-compactions, L2251: the build failed with exit code 126, yet the
    # result is not flagged as an error.
    output = (
        "Exit code: 126\nWall time: 4.7 seconds\nOutput:\n\n> review-agent-dashboard@1.0.0 build\n"
        "> next build\n\n   Creating an optimized production build ...\nFailed to compile.\n\n"
        "./src/app/articles/[id]/page.tsx:115:17\nType error: Cannot find namespace 'JSX'.\n"
    )
    summary = summary_of([
        user("yes, rerun the build with the repo's Node 20.11.1 via Volta"),
        said("", call("b", "volta run npm run build")),
        result("b", output),
    ])

    assert "Type error: Cannot find namespace 'JSX'." in sections(summary)["### Blocked"]


def test_a_success_whose_log_says_fail_is_a_success() -> None:
    # The shape of a migration run from the evaluation corpus: exit code 0, a log that
    # reports a skipped check as FAIL.
    output = "Exit code: 0\nWall time: 3.1 seconds\nOutput:\nmigrating 0042_add_index ... ok\nFAIL check_legacy (skipped)\nDone."
    summary = summary_of([
        user("Run the database migration and tell me when it is done."),
        said("", call("m", "npx prisma migrate deploy")),
        result("m", output),
    ])

    assert sections(summary)["### Blocked"] == "(none)"
    assert "`npx prisma migrate deploy` ok" in sections(summary)["## Commands (latest run)"]


def test_debugger_noise_is_not_a_passing_check() -> None:
    # The shape from the evaluation corpus: a test run whose only output is the debugger.
    summary = summary_of([
        user("Run the unit tests for the parser please."),
        said("", call("t", "npm test -- parser")),
        result("t", "Debugger attached.\nWaiting for the debugger to disconnect..."),
    ])

    assert "passed" not in sections(summary)["### Done"]
    assert sections(summary)["### Blocked"] == "(none)"


def test_the_importers_placeholder_and_an_aborted_command_are_not_blockers() -> None:
    # claude-code-atlas-short: the commit's result was never recorded; pi-coffee-model-switches:
    # the user aborted a command.
    summary = summary_of([
        user("the ai agent is talking to me like im a client, it should recognise the gym owner"),
        said("", call("c", "git add -A && git commit --no-verify -m \"Fix AI agent gym owner context detection\"")),
        result("c", "[No result was recorded for this tool call in the imported session]", error=True),
        said("", call("s", "sleep 30 && vercel list")),
        result("s", "Operation aborted", error=True),
    ])

    assert sections(summary)["### Blocked"] == "(none)"


def test_a_provider_error_is_not_the_works_blocker() -> None:
    # pi-coffee-model-switches: rate limits between the agent's steps.
    summary = summary_of([
        user("سوي له موقع بدزاين مودرن و عصري"),
        {"role": "assistant", "stopReason": "error", "errorMessage": "429 status code (no body)", "content": []},
        said("Done: the site is up on port 8080."),
    ])

    assert sections(summary)["### Blocked"] == "(none)"
    assert "429" not in summary


def test_the_latest_run_of_a_command_wins() -> None:
    # pi-coffee-deepseek: node --check failed on an export alias, the fix made it pass.
    check = 'for f in $(find . -name "*.js" -not -path "./node_modules/*"); do node --check "$f" 2>&1 || echo "✗ $f FAILED"; done; echo "✓ All checked"'
    summary = summary_of([
        user("خليه اقوى و اضخم و سفاح و ضيف له افكتر من عندك"),
        said("", call("1", check)),
        result("1", "/data/data/com.termux/files/home/shadow-realms-bot/database/db.js:718\nSyntaxError: Unexpected identifier 'as'\nCommand exited with code 1", error=True),
        said("", call("2", check)),
        result("2", "✓ All checked"),
    ])

    assert sections(summary)["### Blocked"] == "(none)"
    assert "Unexpected identifier 'as'" not in sections(summary)["### In Progress"]


def test_a_failed_edit_is_fixed_by_a_later_copy_over_the_file() -> None:
    # claude-code-atlas-short: Edit refused before a read, the agent copied the file instead.
    target = "/Users/Sam/apps/gym-dashboard/lib/ai-agents/orchestrator.ts"
    summary = summary_of([
        user("the ai agent is talking to me like im a client, it should recognise the gym owner"),
        said("", {"id": "e", "name": "Edit", "arguments": {"file_path": target, "old_string": "a", "new_string": "b"}}),
        result("e", "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>", error=True, name="Edit"),
        said("", call("cp", f"cp /Users/Sam/lib/ai-agents/orchestrator.ts {target}", name="Bash")),
        result("cp", "", name="Bash"),
    ])

    assert sections(summary)["### Blocked"] == "(none)"


def test_narration_and_offers_are_not_decisions() -> None:
    # claude-code-atlas-sonnet45 and codex-knearme-two-compactions.
    summary = summary_of([
        user("make sure everything is deployed, use the cli to check the deployment and fix if it breaks"),
        said("Let me try a different approach - use `npm ci` instead of `npm install` to avoid the tracker error:"),
        said("If you want local‑timezone display, I can switch to client‑only rendering for those fields."),
    ])

    assert sections(summary)["## Key Decisions"] == "(none)"


def test_a_hypothesis_the_user_rejected_is_not_a_decision() -> None:
    # pi-coffee-model-switches: the assistant's reading of the idea, and the user's "that's not it".
    summary = summary_of([
        user("سوي لي موقع بسمعك و انت بتدرس و بس تكمل بحلل الي درسته و بعمل لك امتحان فيه"),
        said("I'll go with a quiz site where you read the lesson and the site asks you questions."),
        user("no, that's not the idea: I explain the lesson out loud, it listens, analyses and then builds an exam"),
    ])

    assert "quiz site" not in sections(summary)["## Key Decisions"]


def test_a_picked_option_says_what_the_option_was() -> None:
    # codex-lotto: "그래. 그러면 2번쪽으로 하자" after two numbered options; here the bare "2".
    summary = summary_of([
        user("the UI has nothing to do with the picture I drew"),
        said(
            "Two ways to fix it:\n1. Describe the layout and I restyle the components.\n"
            "2. Add the images to the repo (specs/001-lotto-ticketing/assets/issue_ticket.png) and I rebuild from them."
        ),
        user("2"),
    ])

    assert "The user chose 2. Add the images to the repo" in sections(summary)["## Key Decisions"]


def test_the_goal_is_the_current_task_and_user_messages_are_verbatim_newest_first() -> None:
    # codex-lotto: AGENTS.md and the environment arrive as user messages; codex-voice-assistant:
    # a spec-kit command wraps the user's one line.
    summary = summary_of([
        user("# AGENTS.md instructions for /Users/kooksun/PythonProjects/Lotto645\n\n<INSTRUCTIONS>\n## Commands\n\nnpm test && npm run lint\n</INSTRUCTIONS>"),
        user("<environment_context>\n  <cwd>/Users/kooksun/PythonProjects/Lotto645</cwd>\n</environment_context>"),
        user("ok i did 'run dev' and issuing ok. i can see tickets on firebase i issued"),
        said("Great to hear the dev server and issuance flow are running."),
        user("\n## User Input\n\n```text\nStyle-Bert-VITS2 を用いて日本語テキストを自然音声に変換する TTS API を実装したい。\n```\n\nYou **MUST** consider the user input before proceeding (if not empty)."),
    ])
    body = sections(summary)

    assert body["## Goal"] == "- Style-Bert-VITS2 を用いて日本語テキストを自然音声に変換する TTS API を実装したい。"
    assert body["## User Messages (newest first)"].splitlines() == [
        '- "Style-Bert-VITS2 を用いて日本語テキストを自然音声に変換する TTS API を実装したい。"',
        "- \"ok i did 'run dev' and issuing ok. i can see tickets on firebase i issued\"",
    ]
    assert "MUST consider" not in body["## Constraints & Preferences"]


def test_a_pasted_log_is_trimmed_and_is_not_the_goal() -> None:
    # claude-code-atlas-sonnet45: the user pastes a Vercel build log after asking for a deploy.
    log = "\n".join(
        [f"09:20:{46 + n // 10:02d}.{n:03d} Removed ignored file /__tests__/case_{n}.test.ts" for n in range(40)]
        + ["09:21:30.100 Error: Can not repeat \"path\" without a prefix and suffix"]
    )
    summary = summary_of([
        user("make sure everything is deployed to vercel, use the cli to check the deployment and fix if it breaks"),
        said("Deployed; checking the build now."),
        user(log),
    ])
    body = sections(summary)

    assert body["## Goal"].startswith("- make sure everything is deployed")
    quoted = body["## User Messages (newest first)"].splitlines()[0]
    assert 'Can not repeat "path" without a prefix and suffix' in quoted
    assert "pasted log lines trimmed" in quoted and "case_30" not in quoted


def test_a_free_text_summary_is_carried_forward() -> None:
    # claude-code-atlas-opus41 starts with Claude Code's own continuation summary.
    earlier = (
        "This session is being continued from a previous conversation that ran out of context. "
        "The conversation is summarized below:\nSummary:\n1. Primary Request and Intent:\n"
        "   - Corrected branding: Gym Lead Hub (CRM product) not Atlas Fitness (test gym)\n"
        "   - Fix: Changed from address to sam@email.gymleadhub.co.uk with fallback\n"
    )
    summary = summary_of([user(earlier), user("i cant find the delete button")])

    carried = sections(summary)["## Earlier Summary (carried forward)"]
    assert "Gym Lead Hub (CRM product) not Atlas Fitness (test gym)" in carried
    assert "sam@email.gymleadhub.co.uk" in carried
    again = summary_of([user("still no delete button")], previous_summary=summary)
    assert "Gym Lead Hub (CRM product)" in sections(again)["## Earlier Summary (carried forward)"]


def test_think_tags_in_the_text_are_the_models_scratchpad() -> None:
    # pi-termux-qwen: a hypothesis the user then corrected, written between <think> tags.
    summary = summary_of([
        user("we need to be able to login, interact with Yobit.net as headless component for users to login."),
        said("<think>\nLogin in exchange terms usually means authenticating with API keys, so I'll use the API.\n</think>\n\nI wrote exchanges/yobit.py."),
    ])

    assert "API keys" not in summary


def test_exit_codes_are_read_from_every_agents_framing() -> None:
    assert read_output('{"output":"bash: pnpm: command not found\\n","metadata":{"exit_code":127}}').exit_code == 127
    assert read_output("Exit code: 0\nWall time: 1 seconds\nOutput:\nok").exit_code == 0
    assert read_output("sh: 1: which: not found\n\n\nCommand exited with code 127").exit_code == 127
    assert read_output("Exit code 2\n\n> tsc --noEmit").exit_code == 2
    assert verdict("(no output)\n\nCommand exited with code 1", True, 'grep -n "db\\." events/x.js')[0] == "failed"
    assert verdict("\n\nCommand exited with code 1", True, 'grep -n "db\\." events/x.js')[0] == "neutral"


def test_every_item_names_the_entries_it_came_from() -> None:
    raw = [
        user("Run the unit tests for the parser please."),
        said("", call("t", "npm test -- parser")),
        result("t", "Exit code: 1\nOutput:\nFAIL src/parser.test.ts\nTypeError: splitRows is not a function"),
    ]
    messages = MESSAGES.validate_python(raw)
    summary = summarize_offline(SummaryRequest(
        kind="compaction", messages=messages, system_prompt="", prompt="", max_tokens=4000,
    ))

    sources = trace_sources(summary, list(zip(["u1", "a1", "r1"], messages)))

    by_section = {(item.section, item.entryIds[0]) for item in sources}
    assert ("Goal", "u1") in by_section
    assert ("Blocked", "r1") in by_section


def test_the_trail_for_a_model_summary_carries_forward_and_updates() -> None:
    first = SummaryRequest(
        kind="compaction", system_prompt="", prompt="", max_tokens=4000,
        messages=MESSAGES.validate_python([
            user("Build the dashboard."),
            said("", call("b", "npm run build")),
            result("b", "Exit code: 1\nOutput:\nType error: Cannot find namespace 'JSX'."),
        ]),
    )
    trail = artifact_trail(first)
    assert "Cannot find namespace 'JSX'" in trail.split("## Open Errors (computed)")[1]

    later = SummaryRequest(
        kind="compaction", system_prompt="", prompt="", max_tokens=4000,
        previous_summary="## Goal\n- Build the dashboard.\n\n" + trail,
        messages=MESSAGES.validate_python([
            said("", call("b2", "volta run npm run build")),
            result("b2", "Exit code: 0\nOutput:\n✓ Compiled successfully"),
        ]),
    )
    updated = artifact_trail(later)
    assert "Open Errors" not in updated, "the clean build fixed it"
    assert "`volta run npm run build` ok: ✓ Compiled successfully" in updated


def test_a_missing_program_is_a_fact_about_the_machine_not_a_blocker() -> None:
    # pi-termux-qwen: `which` does not exist on Termux; the agent went on with `command -v`.
    summary = summary_of([
        user("this is to directly interact with yobits webpage (an addition to a separate API module)"),
        said("", call("w", "which python3 && python3 --version")),
        result("w", "sh: 1: which: not found\n\n\nCommand exited with code 127", error=True),
    ])
    body = sections(summary)

    assert body["### Blocked"] == "(none)"
    assert "`which` is not installed here (command not found)" in body["## Critical Context"]


def test_a_split_turns_request_is_kept_whole() -> None:
    # claude-code-vps-glm47, the first user message: the whole session is one turn, so the
    # task, its completion signal and its output rules live in the turn's request alone.
    request = (
        "You are Maven Flow, an autonomous development agent.\n\n## Your Task\n\n"
        "1. Find the first incomplete story in the PRD files (docs/prd-*.json)\n"
        "2. Implement that story completely\n"
        "3. Update the PRD to mark it complete (set \"passes\": true)\n"
        "4. Run tests: pnpm run typecheck\n"
        "5. Commit: git add . && git commit -m \"feat: [story-id] [description]\" -m "
        "\"Co-Authored-By: Next Mavens Flow <flow@nextmavens.com>\"\n\n"
        "## Completion Signal\n\nWhen ALL stories are complete, output EXACTLY:\n<promise>COMPLETE</promise>\n\n"
        "## If Not Complete\n\nDo NOT output the signal. Just end your response.\n\n"
        "## Important: Output Formatting\n\n- Use ASCII characters only - no Unicode symbols like checkmarks, arrows, etc.\n"
    )
    raw = [
        user(request),
        said("", call("p", "grep -l '\"passes\": false' docs/prd-*.json")),
        result("p", "docs/prd-dashboard-ui.json"),
    ]

    original = sections(summary_of(raw, kind="turn_prefix"))["## Original Request"]

    assert "<promise>COMPLETE</promise>" in original
    assert "Use ASCII characters only" in original
    # A budget too small for it cuts the middle, keeping the start and the end.
    small = sections(summary_of(raw, kind="turn_prefix", max_tokens=300))["## Original Request"]
    assert small.startswith("- You are Maven Flow") and "[…]" in small and small.endswith("etc.")


def test_a_command_the_user_typed_is_quoted_with_its_input() -> None:
    # codex-voice-assistant L279: `/speckit.specify <description>` arrives as the command's
    # prompt, which names the command; the user's message is the command and its input.
    wrapped = (
        "\n## User Input\n\n```text\nローカル音声アシスタントのバックエンドとフロントエンドの基本プロジェクト構成を作成したい。"
        "FastAPI + React (または Next.js) 構成。\n```\n\nYou **MUST** consider the user input before proceeding "
        "(if not empty).\n\n## Outline\n\nThe text the user typed after `/speckit.specify` in the triggering message "
        "**is** the feature description.\n"
    )
    unnamed = "\n## User Input\n\n```text\nuser story 1\n```\n\nYou **MUST** consider the user input before proceeding.\n"

    body = sections(summary_of([user(unnamed), said("Done."), user(wrapped)]))

    assert "/speckit.specify" not in body["## Critical Context"], "a command, not a file"

    assert body["## User Messages (newest first)"].splitlines() == [
        (
            '- "/speckit.specify ローカル音声アシスタントのバックエンドとフロントエンドの基本プロジェクト構成を作成したい。'
            'FastAPI + React (または Next.js) 構成。"'
        ),
        '- "user story 1"',  # codex-lotto: a prompt that does not name its command
    ]


def codex_output(output: str, exit_code: int) -> str:
    return json.dumps({"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": 1.0}})


def test_errors_kept_as_context_say_they_are_history() -> None:
    # codex-lotto L726-L769: the sandboxed install failed and passed on a retry; the e2e run
    # failed on __dirname, was fixed, then failed on the dev server's port, still open.
    summary = summary_of([
        user("Make `npm run test:e2e` find @playwright/test for the specs outside frontend/."),
        said("", call("i1", "npm install --save-dev cross-env")),
        result("i1", codex_output(
            "npm error code ENOTFOUND\nnpm error network request to https://registry.npmjs.org/cross-env failed, "
            "reason: getaddrinfo ENOTFOUND registry.npmjs.org\n", 1), error=True),
        said("", call("i2", "npm install --save-dev cross-env")),
        result("i2", codex_output("\nadded 4 packages, and audited 524 packages in 1s\n", 0)),
        said("", call("e1", "npm run test:e2e")),
        result("e1", codex_output("\n> playwright test -c playwright.config.ts\n\n"
                                  "ReferenceError: __dirname is not defined in ES module scope\n", 1), error=True),
        said("", call("e2", "npm run test:e2e")),
        result("e2", codex_output("[WebServer] Error: listen EPERM: operation not permitted 0.0.0.0:5173\n"
                                  "Error: Process from config.webServer was not able to start. Exit code: 1\n", 1),
               error=True),
    ])
    body = sections(summary)

    assert "listen EPERM" in body["### Blocked"]
    # Each old failure is one item (a whole short output is fenced) led by what became of it.
    items = re.split(r"\n(?=- |```\n)", body["## Critical Context"])
    [fixed] = [item for item in items if "getaddrinfo ENOTFOUND" in item]
    [earlier] = [item for item in items if "__dirname is not defined" in item]
    assert fixed.lstrip("`\n- ").startswith("Fixed later: `npm install --save-dev cross-env` failed:")
    assert earlier.lstrip("`\n- ").startswith("Failed before its latest run: `npm run test:e2e` failed:")


def test_a_failed_patch_is_told_by_its_message_not_by_the_code_it_missed() -> None:
    # codex-knearme-two-compactions: apply_patch could not find its context lines; the
    # output goes on with those lines, which are code, not the error.
    missed = (
        "apply_patch verification failed: Failed to find expected lines in "
        "/Users/aaronbaker/knearme-workspace/review-agent-dashboard/src/app/exports/page.tsx:\n"
        "        <ExportViewer\n          files={serializedFiles.map((f) => ({\n            ...f,\n"
        "            timestamp: new Date(f.timestamp),\n          }))}\n          initialData={initialData}\n"
        "        />\n      )}\n        </div>\n      </span>"
    )
    summary = summary_of([
        user("Fix the hydration mismatch on the exports page."),
        said("", {"id": "p", "name": "apply_patch", "arguments": {"input": "*** Begin Patch\n*** Update File: src/app/exports/page.tsx\n*** End Patch"}}),
        result("p", missed, error=True, name="apply_patch"),
    ])

    blocked = sections(summary)["### Blocked"]
    assert blocked.startswith("- apply_patch verification failed: Failed to find expected lines in")
    assert "</span>" not in blocked and "</div>" not in blocked


def test_a_file_written_from_a_heredoc_or_a_pr_body_naming_pytest_is_not_a_check() -> None:
    # codex-voice-assistant: test files written with `cat <<'EOF'` and a `gh pr create` whose
    # body lists the tests were Done as passing checks; the real check is `uv run pytest`.
    written = (
        "cat <<'EOF' > /home/relu/misc/local-voice-assistant-codex/backend/tests/test_stt_stream.py\n"
        "import pytest\nfrom fastapi.testclient import TestClient\n\nfrom app.main import app\n\n\n"
        "def test_stream_returns_final_event():\n    client = TestClient(app)\nEOF"
    )
    pr = ('gh pr create --base main --head 001-stt-api --title "feat: add STT API scaffold" --body "## Summary\n'
          '- add tests for file/stream/health/error paths\n\n## Testing\n- uv run --with pytest pytest"')
    summary = summary_of([
        user("テストを実行してください。"),
        said("", call("w", written)),
        result("w", codex_output("", 0)),
        said("", call("t", "uv run --with pytest pytest")),
        result("t", codex_output("============================== 7 passed in 0.43s ===============================\n", 0)),
        said("", call("p", pr)),
        result("p", codex_output("https://github.com/0h-n0/local-voice-assistant-codex/pull/1\n", 0)),
    ])

    done = sections(summary)["### Done"].splitlines()
    assert "- [x] `uv run --with pytest pytest` passed: ============================== 7 passed in 0.43s ===============================" in done
    assert not [line for line in done if line.startswith(("- [x] `cat <<", "- [x] `gh pr create"))]
    assert "- [x] Opened a pull request: https://github.com/0h-n0/local-voice-assistant-codex/pull/1" in done


def test_table_rows_are_not_findings_and_a_fullwidth_question_is_a_question() -> None:
    # codex-voice-assistant: a clarify step's options table, and a Japanese question (`？`).
    options = (
        "**Recommended:** Option B - Short prompts keep costs and latency predictable for an initial LLM service.\n\n"
        "| Option | Description |\n|--------|-------------|\n| A | 1,000 characters max |\n"
        "| B | 4,000 characters max |\n| C | 8,000 characters max |\n\n"
        "You can reply with the option letter (e.g., \"A\"), accept the recommendation by saying \"yes\"."
    )
    asked = (
        "状況確認しました。現在このブランチは新規ファイルがすべて未追跡です。\n\n"
        "3. GitHub CLI（`gh pr create`）で作成しても良いですか？"
    )
    body = sections(summary_of([
        user("Clarify the prompt limits."), said(options), user("B"), said(asked),
    ]))

    assert "characters max" not in body["## Critical Context"]
    assert "GitHub CLI（`gh pr create`）で作成しても良いですか？" in body["## Next Steps"]
    assert "作成しても良いですか" not in body["## Critical Context"]


def test_a_wait_before_a_command_is_not_what_it_runs() -> None:
    # claude-code-atlas-sonnet45: `sleep 120 && vercel list …` timed out in its wait; the
    # next `vercel list …` answered, so nothing is blocked by it.
    summary = summary_of([
        user("make sure everything is deployed, use the cli to check the deployment and fix if it breaks"),
        said("", {"id": "w", "name": "Bash", "arguments": {
            "command": "sleep 120 && vercel list --scope schofield90s-projects atlas-gym-dashboard 2>&1 | head -30"}}),
        result("w", "Command timed out after 2m 0s", error=True, name="Bash"),
        said("", {"id": "l", "name": "Bash", "arguments": {
            "command": "vercel list --scope schofield90s-projects atlas-gym-dashboard 2>&1 | head -30"}}),
        result("l", "Vercel CLI 48.1.7\nAge     Deployment     Status\n2m      https://atlas-gym-dashboard-dizfgv0xv-schofield90s-projects.vercel.app     ● Error", name="Bash"),
    ])

    assert sections(summary)["### Blocked"] == "(none)"


def test_an_edit_is_done_with_what_the_assistant_said_it_was_for() -> None:
    # claude-code-atlas-short: the change that matters is named only in the sentence before
    # the edit; "Let me fix it:" and "commit and push" name no change.
    narrated = (
        "Perfect! Now let me modify the `executeConversationMessage` method to:\n"
        "1. Detect if the user is a gym owner/staff\n2. Inject appropriate context into the system prompt dynamically"
    )
    edit = {"file_path": "/Users/Sam/lib/ai-agents/orchestrator.ts", "old_string": "a", "new_string": "b"}
    summary = summary_of([
        user("the ai agent is talking to me like im a client. It should recognise when its talking to the gym owner"),
        said(narrated, {"id": "e1", "name": "Edit", "arguments": edit}),
        result("e1", "The file /Users/Sam/lib/ai-agents/orchestrator.ts has been updated.", name="Edit"),
        said("Let me fix it:", {"id": "e2", "name": "Edit", "arguments": edit}),
        result("e2", "The file /Users/Sam/lib/ai-agents/orchestrator.ts has been updated.", name="Edit"),
        said("Now let me commit and push these fixes:", {"id": "e3", "name": "Edit", "arguments": edit}),
        result("e3", "<tool_use_error>File has not been read yet.</tool_use_error>", error=True, name="Edit"),
        said("Perfect! The orchestrator now detects owners."),
    ])
    body = sections(summary)

    assert body["### Done"].splitlines()[0] == (
        "- [x] Changed `/Users/Sam/lib/ai-agents/orchestrator.ts`: modify the `executeConversationMessage` method to: "
        "Detect if the user is a gym owner/staff; Inject appropriate context into the system prompt dynamically"
    )
    assert "fix it" not in body["### Done"] and "commit and push" not in body["### Done"]
    # An exclamation is not the state the work is in (the turn's last text, mid-turn).
    mid_turn = sections(summary_of([
        user("Fix the AI agent's gym owner context detection."),
        said("Perfect!", {"id": "c", "name": "Bash", "arguments": {"command": "cp lib/a.ts apps/gym-dashboard/lib/a.ts"}}),
    ]))
    assert "Perfect!" not in mid_turn["### In Progress"]


def test_a_missing_program_between_echoed_separators_is_still_a_fact_about_the_machine() -> None:
    # pi-coffee-model-switches L80-L81: `which ssh ngrok; echo "---"; ssh -V` prints the
    # separator and "ssh: command not found"; the agent goes on with another tunnel.
    summary = summary_of([
        user("هات رابط للموقع"),
        said("", call("s", 'which ssh ngrok 2>/dev/null\necho "---"\n# نتحقق لو ssh متاح\nssh -V 2>&1 | head -1')),
        result("s", "---\n/data/data/com.termux/files/usr/bin/bash: line 4: ssh: command not found\n"),
    ])
    body = sections(summary)

    assert body["### Blocked"] == "(none)"
    assert "`ssh` is not installed here (command not found)" in body["## Critical Context"]


def test_a_second_thought_is_narration_not_a_next_step() -> None:
    # pi-coffee-model-switches: "Actually, let me think about this differently." was the
    # only Next Step; the turn's real open point is the tunnel's 502.
    summary = summary_of([
        user("مش شغالة"),
        said("", call("c", "curl -s -o /dev/null -w '%{http_code}' http://localhost:8080")),
        result("c", "200"),
        said("Actually, let me think about this differently. The serveo tunnel uses SSH websockets.",
             call("t", "ps aux | grep serveo")),
    ])

    assert "think about this differently" not in sections(summary)["## Next Steps"]


def test_a_reports_lines_about_a_file_are_done() -> None:
    # codex-knearme-compacted: the turn's report says what it changed, per file, with verbs
    # ("Marked", "clarified") and leads ("`COMPARISON.md`: added …") the claims missed.
    report = (
        "Marked `COMPARISON.md` as a historical reference with explicit removal notes, and expanded the shared "
        "DB contract with a table-by-table write ownership matrix.\n\n"
        "- `COMPARISON.md`: added historical status and removal notice; clarified file locations as removed.\n"
        "- `.agent/System/shared_db_contract.md`: updated sources/ownership map.\n\n"
        "Tests: Not run (docs only)."
    )
    body = sections(summary_of([
        user("these folders we can get rid of /Users/aaronbaker/knearme-workspace/directory-platforms"),
        said(report),
    ]))

    assert body["### Done"].splitlines() == [
        (
            "- [x] Marked `COMPARISON.md` as a historical reference with explicit removal notes, and expanded the "
            "shared DB contract with a table-by-table write ownership matrix."
        ),
        "- [x] `COMPARISON.md`: added historical status and removal notice; clarified file locations as removed.",
        "- [x] `.agent/System/shared_db_contract.md`: updated sources/ownership map.",
    ]
