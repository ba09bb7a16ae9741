// Drives a real VS Code (code-server) in Debian's Chromium with playwright-core and checks,
// through the workbench's DOM, what the contextd extension shows a user. Run by
// tests/editors/test_vscode_workbench.py, which installs the extension and a test helper
// extension, seeds a session, starts code-server and then checks the logs this run leaves.
//
// env: CS_URL, WS (workspace folder), SHOTS (screenshot directory), RUN (the run directory:
// fail-start, the flag that makes the daemon's interpreter wrapper fail; e2e.log, the helper
// extension's JSON lines), EXPECT (a JSON file: sessionName, usage, treeNodes), FORMAT
// (the extension's pure display code, e2e/shown.ts, bundled as an ES module), WS_EMPTY (a
// workspace without sessions, where following is off), CHROMIUM, PYTHON and DATA (the
// interpreter and data dir of the shared daemon the window attaches to; XDG_RUNTIME_DIR,
// inherited, places its socket), CLAUDE_TRANSCRIPT and CLAUDE_PROJECT (a Claude Code
// transcript of the workspace, and the folder of the followed root to write it to), WS_REMOTE
// (a workspace whose sessions the user's own summarizing service summarizes) and
// SUMMARIZER_MODE (the file that says how that service answers: refuse, hold, answer).
// Prints one "ok"/"FAIL" line per check; exit code 0 when all passed.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { chromium } from "playwright-core";

const { agentPointLine, figureText, statusText, truncate, entryText, ENTRY_LABEL_LENGTH } = await import(process.env.FORMAT);
const RUN = process.env.RUN;
const SHOTS = process.env.SHOTS;
const EXPECT = JSON.parse(readFileSync(process.env.EXPECT, "utf8"));
const FAIL_FLAG = `${RUN}/fail-start`;

/** The status item's text for a figure, as the extension writes it (format.ts), without the icon. */
const figure = (usage) => figureText(usage);
/** The same, once the window knows several sessions and the item names the one it shows (after the figure). */
const named = (name, usage) => statusText({ sessionId: "-", name, usage }, { withName: true }).replace(/^\$\([^)]*\) /, "");
const helperEvents = () =>
  existsSync(`${RUN}/e2e.log`)
    ? readFileSync(`${RUN}/e2e.log`, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line))
    : [];
const latestUsage = (sessionId) =>
  helperEvents().filter((e) => e.usage?.sessionId === sessionId).map((e) => e.usage).pop();
/** The shared daemon's pid, from `contextd status`: the window's own process only forwards to it. */
/** The script agent (e2e/agent.py, the Python client on the shared daemon): `drive NAME` or `mirror AGENT`. */
const scriptAgent = (mode, argument, workspace = process.env.WS) =>
  JSON.parse(execFileSync(process.env.PYTHON, ["e2e/agent.py", process.env.DATA, workspace, mode, argument], { encoding: "utf8" }));
const sharedDaemonPid = () =>
  JSON.parse(execFileSync(process.env.PYTHON, ["-m", "contextd", "--data-dir", process.env.DATA, "status", "--json"], { encoding: "utf8" })).pid;

const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
  return ok;
};
const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
const pageErrors = [];
page.on("pageerror", (e) => pageErrors.push(e.message.split("\n")[0].slice(0, 300)));

const shot = async (name) => {
  await page.screenshot({ path: `${SHOTS}/${name}.png` }).catch(() => {});
  console.log(`     screenshot ${SHOTS}/${name}.png (${elapsed()})`);
};
const quickInput = page.locator(".quick-input-widget");
const rowIn = (target, text) => target.locator(".quick-input-widget .quick-input-list .monaco-list-row", { hasText: text }).first();
const quickRow = (text) => rowIn(page, text);
const statusItem = page.locator('.part.statusbar [id="contextd.contextd.contextd.context"]');
const itemText = async () => (await statusItem.innerText({ timeout: 5000 }).catch(() => "")).trim();

/** Every notification seen during the run, with its severity, collected at each step. */
const seenToasts = new Map();
async function collectToasts() {
  const toasts = await page
    .$$eval(".notifications-toasts .notification-toast", (els) =>
      els.map((el) => ({
        severity: el.querySelector(".codicon-error") ? "error" : el.querySelector(".codicon-warning") ? "warning" : "info",
        text: el.innerText.replace(/\s+/g, " ").trim(),
      })),
    )
    .catch(() => []);
  for (const toast of toasts) seenToasts.set(`${toast.severity}: ${toast.text}`, toast);
  return toasts;
}
const errorToasts = () => [...seenToasts.values()].filter((t) => t.severity !== "info");

async function until(condition, what, timeout = 30_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    await collectToasts();
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await page.waitForTimeout(250);
  }
}

/** Runs a command from the palette of `target` (the first window unless told). */
async function palette(title, target = page) {
  await target.keyboard.press("Escape");
  await target.keyboard.press("F1");
  const input = target.locator(".quick-input-widget input.input");
  await input.waitFor();
  await input.fill(`>${title}`);
  await rowIn(target, title).waitFor({ timeout: 20_000 });
  await target.keyboard.press("Enter");
}

/** Whether the item is on the status bar (not wrapped out of it) and its figure is drawn whole. */
async function itemFits(target = page) {
  return target
    .evaluate(() => {
      const item = document.querySelector('.part.statusbar [id="contextd.contextd.contextd.context"]');
      const label = item?.querySelector(".statusbar-item-label");
      if (!item || !label) return { visible: false };
      const bar = document.querySelector(".part.statusbar").getBoundingClientRect();
      const box = label.getBoundingClientRect();
      const text = [...label.childNodes].find((n) => n.nodeType === Node.TEXT_NODE && /\d/.test(n.textContent));
      const figure = text?.textContent.match(/^\s*\S+ \d+%/);
      let figureRight = Infinity;
      if (figure) {
        const range = document.createRange();
        range.setStart(text, 0);
        range.setEnd(text, figure[0].length);
        figureRight = range.getBoundingClientRect().right;
      }
      return {
        visible: box.width > 0 && box.top >= bar.top - 1 && box.bottom <= bar.bottom + 1 && box.left >= bar.left && box.right <= bar.right + 1,
        figureWhole: figureRight <= box.right,
        text: label.textContent.trim(),
        width: Math.round(box.width),
      };
    })
    .catch((error) => ({ visible: false, error: String(error) }));
}

/** Another browser window (tab) of the same code-server on `folder`, with the helpers the checks need. */
async function openWindow(folder) {
  const other = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  other.on("pageerror", (e) => pageErrors.push(e.message.split("\n")[0].slice(0, 300)));
  await other.goto(`${process.env.CS_URL}/?folder=${encodeURIComponent(folder)}`);
  await other.waitForSelector(".monaco-workbench .part.statusbar", { timeout: 120_000 });
  const item = other.locator('.part.statusbar [id="contextd.contextd.contextd.context"]');
  return {
    page: other,
    item,
    row: (text) => rowIn(other, text),
    itemText: async () => (await item.innerText({ timeout: 5000 }).catch(() => "")).trim(),
    shot: async (name) => {
      await other.screenshot({ path: `${SHOTS}/${name}.png` }).catch(() => {});
      console.log(`     screenshot ${SHOTS}/${name}.png (${elapsed()})`);
    },
    palette: (title) => palette(title, other),
  };
}

/** The contextd container in the side bar (its activity bar icon), which holds the Sessions view. */
const TREE = '[id="workbench.view.extension.contextd"]';

/** The Sessions view, shown in its own side bar container. */
async function expandTree() {
  if (!(await page.locator(`${TREE} .monaco-list`).first().isVisible().catch(() => false))) await palette("contextd: Show Session Tree");
  await page.locator(`${TREE} .monaco-list`).first().waitFor({ timeout: 20_000 });
}

async function treeRows() {
  return page.$$eval(`${TREE} .monaco-list-row`, (rows) =>
    rows
      .sort((a, b) => Number(a.getAttribute("data-index")) - Number(b.getAttribute("data-index")))
      .map((row) => ({
        label: (row.querySelector(".label-name")?.textContent ?? "").trim(),
        description: (row.querySelector(".label-description")?.textContent ?? "").trim(),
        spoken: row.getAttribute("aria-label") ?? "",
      })),
  );
}

try {
  await page.goto(`${process.env.CS_URL}/?folder=${encodeURIComponent(process.env.WS)}`);
  await page.waitForSelector(".monaco-workbench .part.statusbar", { timeout: 120_000 });
  await page.locator(".explorer-folders-view, .pane-body").first().waitFor({ timeout: 60_000 });
  await until(() => helperEvents().some((e) => e.event === "activated"), "the extensions to activate", 60_000);
  console.log(`     workbench up, extensions active (${elapsed()})`);
  await shot("01-workbench");
  await palette("contextd e2e: Record Environment");
  console.log(`     environment: ${JSON.stringify(await until(() => helperEvents().find((e) => e.event === "environment"), "the environment"))}`);
  // At start the item shows the workspace's session that changed last: the seeded one.
  await until(async () => (await itemText()) === figure(EXPECT.usage), "the item at start", 15_000).catch(() => {});
  const atStart = await itemText();
  check(atStart === figure(EXPECT.usage), `at start the item shows the workspace's latest session "${figure(EXPECT.usage)}" (it reads "${atStart}")`);

  // The seeded session, opened from Switch Session: the item shows its figure.
  await palette("contextd: Switch Session");
  await quickRow(EXPECT.sessionName).waitFor({ timeout: 60_000 });
  const focusedRow = async () => page.locator(".quick-input-widget .quick-input-list .monaco-list-row.focused").first().innerText().catch(() => "");
  const preselected = await until(async () => ((await focusedRow()).includes(EXPECT.sessionName) ? focusedRow() : undefined), "the preselected row", 5_000).catch(focusedRow);
  await shot("02a-switch-session-preselects-the-shown-one");
  check(preselected.includes(EXPECT.sessionName) && !preselected.includes("New session"), `Switch Session preselects the session shown, not "New session" (${JSON.stringify(preselected)})`);
  await quickRow(EXPECT.sessionName).click();
  const sessionId = EXPECT.sessionId;
  await until(async () => (await itemText()) !== "", "the session's status item");
  const seeded = await itemText();
  await shot("02-seeded-session");
  check(seeded === figure(EXPECT.usage), `the status item reads the seeded session's figure "${figure(EXPECT.usage)}" (it reads "${seeded}")`);
  const label = await statusItem.getAttribute("aria-label");
  check(label?.startsWith("contextd session seeded demo:") && !label.includes("**"), `the item's accessibility label is words, not Markdown ("${label}")`);

  // The Session Tree view lists the session's entries, in order, the leaf marked.
  await expandTree();
  const rows = await until(async () => {
    const shown = await treeRows();
    return shown.length >= 5 ? shown : undefined;
  }, "the Session Tree's rows");
  await shot("03-session-tree");
  const names = { sessionName: EXPECT.sessionName, nameOf: () => undefined };
  const expectedLabels = EXPECT.treeNodes.slice(0, rows.length).map((n) => truncate(entryText(n, names), ENTRY_LABEL_LENGTH) || n.type);
  check(
    JSON.stringify(rows.map((r) => r.label)) === JSON.stringify(expectedLabels),
    `the Session Tree's first ${rows.length} rows are the session's first entries: ${JSON.stringify(rows.map((r) => r.label).slice(0, 3))}…`,
  );

  // An agent appends through the extension's API: the figure follows.
  await palette("contextd e2e: Append to Current Session");
  const appended = await until(() => helperEvents().find((e) => e.event === "appended"), "the helper's append");
  await until(async () => (await itemText()) === figure(appended.usage), "the figure after the append", 15_000).catch(() => {});
  const afterAppend = await itemText();
  check(afterAppend !== seeded && afterAppend === figure(appended.usage), `after an append the item reads the daemon's new figure "${figure(appended.usage)}" (it reads "${afterAppend}")`);

  // A script appends to another session of the workspace through the shared daemon: the
  // item shows that session, which nobody opened in this window, with its name.
  const agent = scriptAgent("drive", "nightly agent");
  console.log(`     the script agent appended to ${agent.sessionId} (${elapsed()})`);
  const agentItem = named("nightly agent", agent.usage);
  await until(async () => (await itemText()) === agentItem, "the script's session in the item", 15_000).catch(() => {});
  const afterScript = await itemText();
  await shot("04-script-session");
  check(afterScript === agentItem, `after a script appends to another session of the workspace, the item reads that session's figure "${agentItem}" (it reads "${afterScript}")`);
  await palette("contextd: Switch Session");
  const listed = await quickRow("nightly agent").waitFor({ timeout: 15_000 }).then(() => true, () => false);
  await shot("05-switch-session-lists-the-script");
  check(listed, "Switch Session lists the session the script drives");
  await page.keyboard.press("Escape");

  // Compact Now (on the session this window works with): the item shows the figure after the compaction.
  await palette("contextd: Compact Now");
  await quickInput.locator("input.input[placeholder*='failing test']").waitFor();
  await quickInput.locator("input.input").press("Enter");
  await until(() => [...seenToasts.values()].some((t) => /contextd: compacted/.test(t.text)), "the compaction's result", 60_000);
  await page.waitForTimeout(500);
  const compacted = latestUsage(sessionId);
  const afterCompaction = await itemText();
  await shot("06-compacted");
  check(compacted.tokens < appended.usage.tokens, `the compaction lowered the daemon's figure (${appended.usage.tokens} -> ${compacted.tokens})`);
  check(
    afterCompaction === named(EXPECT.sessionName, compacted),
    `after the compaction the item shows that session again, "${named(EXPECT.sessionName, compacted)}" (it reads "${afterCompaction}")`,
  );
  // Its tooltip gives the compaction's one-line summary (the test compares it with the stored one).
  await statusItem.hover();
  const hover = page.locator(".monaco-hover, .workbench-hover").filter({ hasText: "Last compaction" }).first();
  const tooltip = await hover.innerText({ timeout: 10_000 }).catch(() => "");
  writeFileSync(`${RUN}/tooltip.txt`, tooltip);
  await shot("07-tooltip");
  check(/Summary: \S/.test(tooltip), `the item's tooltip has the last compaction's summary line (${JSON.stringify(tooltip.slice(0, 400))})`);
  check(/\nOf which: summary \S+ · messages \S+/.test(tooltip), "the tooltip splits the figure into the parts the daemon reports (summary, messages)");
  await page.mouse.move(10, 500);

  // The tree shows what the compaction folded away: the oldest entries.
  await expandTree();
  const foldedRows = await until(async () => {
    const shown = await treeRows();
    return shown[2]?.description.includes("folded into a summary") ? shown : undefined;
  }, "the folded entries in the tree", 15_000).catch(() => treeRows());
  await shot("08-folded-in-tree");
  check(
    foldedRows.slice(2, 6).every((r) => r.description.includes("folded into a summary")),
    `the tree marks the entries the compaction folded away (${JSON.stringify(foldedRows.slice(2, 4).map((r) => r.description))})`,
  );

  // Move Here from the tree's context menu: the leaf moves to that entry.
  const targetIndex = 3;
  const targetRow = page.locator(`${TREE} .monaco-list-row[data-index='${targetIndex}']`);
  await targetRow.click({ button: "right" });
  const moveHere = page.locator(".context-view .action-item", { hasText: /^Move Here$/ }).first();
  await moveHere.waitFor({ timeout: 10_000 });
  await shot("09-tree-context-menu");
  await moveHere.click();
  await until(async () => (await targetRow.locator(".label-description").textContent())?.includes("current"), "the moved leaf in the tree", 20_000).catch(() => {});
  const movedDescription = (await targetRow.locator(".label-description").textContent()) ?? "";
  await shot("10-moved-leaf");
  check(movedDescription.includes("current"), `after Move Here the chosen row is the current leaf ("${movedDescription}")`);
  writeFileSync(`${RUN}/moved-to.txt`, (await treeRows())[targetIndex].label);
  const afterMove = await itemText();
  const moved = latestUsage(sessionId);
  check(
    afterMove === named(EXPECT.sessionName, moved) && afterMove !== afterCompaction,
    `after the move the item reads the shorter context's figure "${named(EXPECT.sessionName, moved)}" (it reads "${afterMove}")`,
  );

  await collectToasts();
  check(errorToasts().length === 0, `no error or warning notification in the healthy run (${JSON.stringify(errorToasts())})`);

  // The shared daemon dies: the item says so, and the window starts a new one by itself.
  const crashedPid = sharedDaemonPid();
  process.kill(crashedPid, "SIGKILL");
  console.log(`     killed the shared daemon (pid ${crashedPid}) (${elapsed()})`);
  const sawDisconnected = await until(async () => (await itemText()).startsWith("disconnected"), "the disconnected state", 10_000).then(() => true, () => false);
  await until(async () => (await itemText()) === afterMove, "the window's own recovery", 30_000).catch(() => {});
  const selfRecovered = await itemText();
  check(
    sawDisconnected && selfRecovered === afterMove && sharedDaemonPid() !== crashedPid,
    `a killed shared daemon shows as disconnected, then the window starts a new one and reads "${afterMove}" again (it reads "${selfRecovered}")`,
  );

  // The shared daemon dies, and the interpreter no longer starts: disconnected, one message with the fix.
  writeFileSync(FAIL_FLAG, "");
  const pid = sharedDaemonPid();
  process.kill(pid, "SIGKILL");
  console.log(`     killed the shared daemon (pid ${pid}) (${elapsed()})`);
  await until(async () => (await itemText()).includes("disconnected"), "the disconnected state", 15_000).catch(() => {});
  const disconnected = await itemText();
  check(disconnected === `disconnected · ${EXPECT.sessionName}`, `a dead shared daemon leaves the item disconnected, not its last figure (it reads "${disconnected}")`);
  await until(() => errorToasts().some((t) => /did not start/.test(t.text)), "the did-not-start message", 30_000).catch(() => {});
  await page.waitForTimeout(4000); // room for any further restart attempt and its messages
  await collectToasts();
  await shot("11-disconnected");
  const problems = errorToasts();
  check(
    problems.length === 1 && /did not start.*Is contextd installed/.test(problems[0].text) && /Open Settings/.test(problems[0].text),
    `one message says the daemon did not start, with the fix (${JSON.stringify(problems)})`,
  );
  check((await itemText()) === `disconnected · ${EXPECT.sessionName}`, "the item stays disconnected while no daemon runs");

  // Restart Daemon, with a working interpreter again: the session's figure is back.
  rmSync(FAIL_FLAG);
  await palette("Notifications: Clear All Notifications");
  await palette("contextd: Restart Daemon");
  await until(async () => (await itemText()) === afterMove, "the figure after the restart", 30_000).catch(() => {});
  const recovered = await itemText();
  await shot("12-recovered");
  check(recovered === afterMove, `after Restart Daemon (a new shared daemon) the item reads the session's figure again "${afterMove}" (it reads "${recovered}")`);
  check(sharedDaemonPid() !== pid, "Restart Daemon started a new shared daemon");

  // A hand-off: the new session is named after its goal, and its document opens read-only.
  // Right after the restart: the window is still reopening its sessions (it once cancelled a
  // hand-off started meanwhile, with only a passing "cancelled" toast to show for it).
  await palette("contextd: Hand Off to New Session");
  const goalInput = quickInput.locator("input.input[placeholder*='migration']");
  await goalInput.waitFor();
  await goalInput.fill("finish the month-end fix");
  await until(async () => (await goalInput.inputValue().catch(() => "")) === "finish the month-end fix", "the goal in the input box", 10_000);
  await goalInput.press("Enter");
  const submitted = await quickInput.waitFor({ state: "hidden", timeout: 10_000 }).then(() => true, () => false);
  console.log(`     hand-off goal ${submitted ? "submitted" : "NOT submitted: the input box is still open"} (${elapsed()})`);
  if (!submitted) throw new Error("the hand-off's goal input box stayed open after Enter");
  // Its outcome, whichever it is: every toast is collected while waiting, so a passing one says what happened.
  const outcome = await until(
    () => [...seenToasts.values()].find((t) => /contextd: (handed off|hand-off)/.test(t.text)),
    "the hand-off's outcome",
    60_000,
  );
  if (!/contextd: handed off/.test(outcome.text)) throw new Error(`the hand-off did not complete: ${outcome.severity}: ${outcome.text}`);
  const handedOff = page.locator(".notifications-toasts .notification-toast", { hasText: "contextd: handed off" }).first();
  const handOffText = outcome.text;
  check(/handed off seeded demo to the new session finish the month-end fix\./.test(handOffText), `the hand-off's session is named after its goal ("${handOffText}")`);
  // The new session is the one that changed last: the item names it, now that there are two.
  // Shortened as the item shortens a name (the tooltip has it whole).
  const goalShown = named("finish the month-end fix", EXPECT.usage).split(" · ").slice(1).join(" · ");
  await until(async () => (await itemText()).endsWith(` · ${goalShown}`), "the hand-off's session in the item", 15_000).catch(() => {});
  const handedOffItem = await itemText();
  check(/^\S+\/\S+ \d+% · /.test(handedOffItem) && handedOffItem.endsWith(` · ${goalShown}`), `the item shows the hand-off's new session, named ("${handedOffItem}")`);
  check(/Show Document Copy Hand-off/.test(handOffText), `the hand-off's notification offers Copy Hand-off beside Show Document ("${handOffText}")`);
  await handedOff.locator(".monaco-button", { hasText: "Show Document" }).click();
  const tab = page.locator(".tabs-container .tab", { hasText: "Hand-off to finish the month-end fix" }).first();
  await tab.waitFor({ timeout: 15_000 });
  await page.locator(".editor-group-container .monaco-editor .view-lines").first().click();
  await page.keyboard.type("x");
  const readOnly = page.locator(".monaco-editor-overlaymessage", { hasText: /read-only/i }).first();
  await readOnly.waitFor({ timeout: 10_000 }).catch(() => {});
  await shot("13-hand-off-document");
  check((await readOnly.count()) === 1 && !(await tab.getAttribute("class")).includes("dirty"), "the hand-off document opens read-only, with nothing to save, named after the new session");
  // The new session's tree names the session it was handed off from by its name.
  await expandTree();
  const handOffRows = await until(async () => {
    const shown = await treeRows();
    return shown.some((r) => r.spoken.includes("hand-off from")) ? shown : undefined;
  }, "the hand-off entry in the tree", 15_000).catch(() => treeRows());
  await shot("13a-hand-off-in-tree");
  check(
    // The row's spoken label has the text its narrow row cuts.
    handOffRows.some((r) => r.spoken.includes(`hand-off from ${EXPECT.sessionName}: `)),
    `the new session's tree names the session it came from ("${handOffRows.find((r) => r.spoken.includes("hand-off"))?.spoken.slice(0, 80)}")`,
  );
  await palette("View: Close All Editors");

  // contextd.pythonPath changed at run time to an interpreter that does not exist: the same
  // one message with the fix; fixing the setting brings the daemon back.
  await palette("Notifications: Clear All Notifications");
  seenToasts.clear();
  const machineSettings = `${RUN}/user-data/Machine/settings.json`;
  const working = readFileSync(machineSettings, "utf8");
  writeFileSync(machineSettings, JSON.stringify({ ...JSON.parse(working), "contextd.pythonPath": "/nonexistent/python3" }));
  await until(() => errorToasts().length > 0, "the message about the broken interpreter", 30_000).catch(() => {});
  await page.waitForTimeout(3000);
  await collectToasts();
  await shot("14-broken-interpreter");
  check(
    errorToasts().length === 1 && /did not start with \/nonexistent\/python3/.test(errorToasts()[0].text) && /Open Settings/.test(errorToasts()[0].text),
    `a broken contextd.pythonPath set at run time gives one message with the fix (${JSON.stringify(errorToasts())})`,
  );
  // Its Open Settings shows the setting where VS Code keeps it in a remote window (code-server is one): not "No Settings Found".
  const broken = page.locator(".notifications-toasts .notification-toast", { hasText: "did not start with /nonexistent/python3" }).first();
  if (await broken.count()) {
    await broken.locator(".monaco-button", { hasText: "Open Settings" }).click();
    const settingsBody = page.locator(".settings-editor .settings-body");
    await until(async () => /Python Path/.test(await settingsBody.innerText().catch(() => "")), "the setting in the settings editor", 15_000).catch(() => {});
    const settingsText = (await settingsBody.innerText().catch(() => "")).replace(/\s+/g, " ");
    await shot("14a-open-settings");
    check(/Python Path/.test(settingsText) && !/No Settings Found/i.test(settingsText), `Open Settings shows contextd.pythonPath ("${settingsText.slice(0, 160)}")`);
    await palette("View: Close All Editors");
  } else check(false, "the broken interpreter's message is still shown, to click its Open Settings");
  writeFileSync(machineSettings, working);
  await until(async () => (await itemText()) === handedOffItem, "the daemon after the setting was fixed", 30_000).catch(() => {});
  const fixed = await itemText();
  check(fixed === handedOffItem, `after the setting is fixed the item reads "${handedOffItem}" again (it reads "${fixed}")`);

  // Claude Code works in this workspace: the daemon follows its transcript, and the item shows
  // the mirror with the agent's name and the figure the daemon reports for it.
  mkdirSync(process.env.CLAUDE_PROJECT, { recursive: true });
  copyFileSync(process.env.CLAUDE_TRANSCRIPT, `${process.env.CLAUDE_PROJECT}/7d1c2f0e-8b1a-4c3d-9e5f-0a1b2c3d4e5f.jsonl`);
  await until(async () => (await itemText()).includes(" · Claude Code · "), "the mirror in the item", 30_000).catch(() => {});
  // What the daemon says of the mirror, asked by a script once the transcript is in.
  const mirror = scriptAgent("mirror", "claude-code");
  // As format.ts writes a named item, without its icon.
  const mirrorItem = statusText(mirror, { withName: true }).replace(/^\$\([^)]*\) /, "");
  await until(async () => (await itemText()) === mirrorItem, "the mirror's figure in the item", 15_000).catch(() => {});
  const mirrorShown = await itemText();
  await shot("15-mirror");
  check(mirrorItem.includes(" · Claude Code · ") && mirrorShown === mirrorItem, `a Claude Code session of the workspace shows in the item with the agent's name "${mirrorItem}" (it reads "${mirrorShown}")`);
  // Its actions leave out what would write to it.
  await statusItem.click();
  await quickRow("Compact Preview").waitFor({ timeout: 15_000 }).catch(() => {});
  const actions = (await page.locator(".quick-input-widget .quick-input-list .monaco-list-row").allInnerTexts()).map((t) => t.trim());
  await shot("16-mirror-actions");
  check(
    actions.some((a) => a.includes("Compact Preview")) && !actions.some((a) => /Compact Now|Go to Entry|Label Entry|Auto-compaction|Idle/.test(a)),
    `the mirror's actions leave out what would write to it (${JSON.stringify(actions)})`,
  );
  await page.keyboard.press("Escape");
  // Its tooltip describes the agent's session: who compacts it, and no contextd threshold.
  await page.mouse.move(10, 500);
  await statusItem.hover();
  const mirrorHover = page.locator(".monaco-hover, .workbench-hover").filter({ hasText: "Read-only mirror" }).first();
  const mirrorTooltip = await mirrorHover.innerText({ timeout: 10_000 }).catch(() => "");
  await shot("17-mirror-tooltip");
  check(
    /Claude Code compacts this session itself/.test(mirrorTooltip) && /Compactions in the transcript: /.test(mirrorTooltip) && !/Compaction threshold/.test(mirrorTooltip),
    `the mirror's tooltip says Claude Code compacts it and counts its compactions, with no contextd threshold (${JSON.stringify(mirrorTooltip.slice(0, 500))})`,
  );
  // And where Claude Code will compact it: its settings (CLAUDE_CONFIG_DIR) set 60% of its
  // effective window, the model's window less the 20k it keeps for the summary.
  const point = mirror.usage.agentCompaction;
  const pointLine = agentPointLine(point ?? { enabled: false, tokens: null, percent: null, basis: "" });
  check(
    point?.enabled && point.tokens === Math.floor(0.6 * (mirror.usage.contextWindow - 20_000)) && /CLAUDE_AUTOCOMPACT_PCT_OVERRIDE = 60 in /.test(point.basis),
    `the daemon puts Claude Code's compaction point at 60% of its effective window, from its settings (${JSON.stringify(point)})`,
  );
  check(
    /^Agent compacts at ~\S+ \(\d+(\.\d)?%\)$/.test(pointLine) && mirrorTooltip.includes(pointLine) && /How contextd knows: Claude Code's rule/.test(mirrorTooltip),
    `the mirror's tooltip shows the agent's own compaction point "${pointLine}" and how it was worked out`,
  );
  await page.mouse.move(10, 500);

  // Narrow windows: the figure comes first and stays whole; the name shortens or drops.
  for (const width of [760, 560]) {
    await page.setViewportSize({ width, height: 800 });
    await until(async () => (await itemFits()).visible, `the item in a ${width} px window`, 5_000).catch(() => {});
    const fits = await itemFits();
    await shot(`18-narrow-${width}`);
    check(fits.visible && fits.figureWhole, `in a ${width} px window the item is shown with its whole figure first (${JSON.stringify(fits)})`);
  }
  await page.setViewportSize({ width: 1600, height: 1000 });

  // A second window on the workspace, opened while the shared daemon holds a session of
  // another workspace: it keeps to this workspace's sessions, by name.
  mkdirSync(`${process.env.WS}-other`, { recursive: true });
  const other = scriptAgent("drive", "other workspace session", `${process.env.WS}-other`);
  console.log(`     a script's session of another workspace: ${other.sessionId} (${elapsed()})`);
  const second = await openWindow(process.env.WS);
  await until(async () => (await second.itemText()) === mirrorItem, "the second window's item", 30_000).catch(() => {});
  const secondStart = await second.itemText();
  await second.shot("19-second-window");
  check(secondStart === mirrorItem, `a second window starts on the workspace's latest session "${mirrorItem}" (it reads "${secondStart}")`);
  await second.palette("contextd: Switch Session");
  await second.row("nightly agent").waitFor({ timeout: 15_000 });
  await second.row("nightly agent").click();
  await until(async () => (await second.itemText()) === agentItem, "the chosen session in the second window", 15_000).catch(() => {});
  const secondPicked = await second.itemText();
  await second.shot("20-second-window-switch-session");
  check(secondPicked === agentItem, `Switch Session in the second window shows the chosen session by name "${agentItem}" (it reads "${secondPicked}")`);
  await second.palette("contextd: Delete Session…");
  await second.row("nightly agent").waitFor({ timeout: 15_000 });
  await second.row("nightly agent").click();
  const confirm = second.page.locator(".monaco-dialog-box");
  await confirm.waitFor({ timeout: 10_000 });
  await confirm.locator(".monaco-button", { hasText: /^Delete$/ }).click();
  await until(async () => !(await second.itemText()).endsWith(" · nightly agent"), "the item after the delete", 15_000).catch(() => {});
  const afterDelete = await second.itemText();
  await second.shot("21-second-window-after-delete");
  const ours = [EXPECT.sessionName, "finish the month-end fix", mirrorItem.split(" · ").slice(1).join(" · ")];
  check(
    ours.some((title) => afterDelete.endsWith(` · ${title}`)),
    `after Delete Session the second window shows a session of this workspace by name, not another workspace's (it reads "${afterDelete}")`,
  );
  await second.page.close();

  // A workspace without sessions: an idle item says the window is connected, and one click follows the agents there.
  const empty = await openWindow(process.env.WS_EMPTY);
  await until(async () => (await empty.itemText()) === "contextd", "the idle item", 30_000).catch(() => {});
  const idle = await empty.itemText();
  await empty.shot("22-empty-workspace");
  check(idle === "contextd", `in a workspace without sessions the item says contextd is there (it reads "${idle}")`);
  await empty.item.click();
  const follow = empty.row("Follow Claude Code / Codex / pi sessions of this workspace");
  const offered = await follow.waitFor({ timeout: 10_000 }).then(() => true, () => false);
  await empty.shot("23-empty-workspace-get-started");
  check(offered, "its click offers to follow Claude Code / Codex / pi sessions of the workspace");
  if (offered) {
    await follow.click();
    const followed = empty.page.locator(".notifications-toasts .notification-toast", { hasText: "contextd: following" }).first();
    check(await followed.waitFor({ timeout: 15_000 }).then(() => true, () => false), "one click turns following on for the workspace, and says so");
    await empty.shot("24-empty-workspace-following");
  }
  // The walkthrough explains how an agent or a script feeds a session.
  await empty.item.click();
  const howTo = empty.row("How an agent or a script feeds a session");
  await howTo.waitFor({ timeout: 10_000 });
  await howTo.click();
  const walkthrough = empty.page.locator(".gettingStartedContainer", { hasText: "Get started with contextd" }).first();
  const opened = await walkthrough.waitFor({ timeout: 20_000 }).then(() => true, () => false);
  const steps = opened ? (await walkthrough.innerText()).replace(/\s+/g, " ") : "";
  await empty.shot("25-walkthrough");
  check(
    opened && /Follow the agent you already run/.test(steps) && /Feed a session from an agent or a script/.test(steps),
    `the walkthrough opens with its steps (${JSON.stringify(steps.slice(0, 200))})`,
  );
  await empty.page.close();

  // A workspace whose sessions the user's own service summarizes (summarizer.provider remote;
  // the test runs the service, and SUMMARIZER_MODE says how it answers). The first window
  // moves there; a script fills a session past 95%, and the threshold's compaction fails.
  const remote = process.env.WS_REMOTE;
  const summarizer = (mode) => writeFileSync(process.env.SUMMARIZER_MODE, mode);
  const toastIn = (target, text) => target.locator(".notifications-toasts .notification-toast", { hasText: text }).first();
  const tooltipOf = async (target, item, text) => {
    await target.mouse.move(10, 500);
    await item.hover();
    return target.locator(".monaco-hover, .workbench-hover").filter({ hasText: text }).first().innerText({ timeout: 15_000 }).catch(() => "");
  };
  summarizer("refuse");
  await page.goto(`${process.env.CS_URL}/?folder=${encodeURIComponent(remote)}`);
  await page.waitForSelector(".monaco-workbench .part.statusbar", { timeout: 120_000 });
  await until(async () => (await itemText()) === "contextd", "the first window in the remote workspace", 60_000);
  const started = scriptAgent("drive", "checks summarized elsewhere", remote);
  writeFileSync(`${RUN}/remote-session.txt`, started.sessionId);
  // The window knows the session before it fills: it then hears the compaction that follows.
  await until(async () => (await itemText()).startsWith(figure(started.usage)), "the script's session in the first window", 30_000);
  const filled = scriptAgent("fill", started.sessionId, remote);
  console.log(`     the script filled its session to ${filled.usage.percent}% (${elapsed()})`);
  const failedToast = await until(
    () => [...seenToasts.values()].find((t) => /contextd: compaction of checks summarized elsewhere failed/.test(t.text)),
    "the failed compaction's message",
    60_000,
  ).catch(() => undefined);
  await until(async () => (await itemText()).startsWith(figure(filled.usage)), "the full session's figure", 15_000).catch(() => {});
  const failedTooltip = await tooltipOf(page, statusItem, "Not compacted");
  const failedKind = (await statusItem.getAttribute("class")) ?? "";
  await shot("26-failed-compaction-tooltip");
  check(filled.usage.percent > 95 && failedKind.includes("error-kind"), `a session past 95% is red (${filled.usage.percent}%, "${failedKind}")`);
  check(
    Boolean(failedToast) &&
      /Not compacted: the last compaction \(threshold\) failed: .*refuses this conversation/.test(failedTooltip) &&
      /What to do: Compact Now to try again; if it fails again, check the contextd\.summarizer settings/.test(failedTooltip),
    `its tooltip says why the automatic compaction failed and what to do (${JSON.stringify(failedTooltip.slice(0, 600))})`,
  );

  // A second window on the workspace; the first compacts the session, and the service holds
  // its answer: the second shows the compaction without Cancel, only the first may stop it.
  summarizer("hold");
  await page.mouse.move(10, 500);
  const watcher = await openWindow(remote);
  await until(async () => (await watcher.itemText()).startsWith(figure(filled.usage)), "the session in the second window", 60_000);
  await statusItem.click();
  await quickRow("Compact Now").waitFor({ timeout: 15_000 });
  await quickRow("Compact Now").click();
  await quickInput.locator("input.input[placeholder*='failing test']").waitFor();
  await quickInput.locator("input.input").press("Enter");
  const elsewhere = toastIn(watcher.page, "asked for elsewhere");
  const seenElsewhere = await elsewhere.waitFor({ timeout: 60_000 }).then(() => true, () => false);
  const elsewhereText = seenElsewhere ? (await elsewhere.innerText()).replace(/\s+/g, " ") : "";
  const elsewhereButtons = await elsewhere.locator(".monaco-button").allInnerTexts().catch(() => []);
  await watcher.shot("27-second-window-progress-without-cancel");
  check(
    seenElsewhere && /contextd: compacting checks summarized elsewhere \(manual, asked for elsewhere\)/.test(elsewhereText) && !elsewhereButtons.some((b) => /Cancel/.test(b)),
    `the second window shows the first window's compaction, without Cancel (${JSON.stringify(elsewhereText)}, buttons ${JSON.stringify(elsewhereButtons)})`,
  );
  // The quick pick gave the focus back to the item, whose tooltip, shown while it has it,
  // covers the notifications: a click on the empty editor area takes it away.
  await page.mouse.click(600, 300);
  await page.locator(".context-view .rendered-markdown").waitFor({ state: "hidden", timeout: 10_000 }).catch(() => {});
  const ownCancel = toastIn(page, "contextd: compacting checks summarized elsewhere (manual)").locator(".monaco-button", { hasText: /^Cancel$/ });
  const cancellable = await ownCancel.waitFor({ timeout: 30_000 }).then(() => true, () => false);
  await shot("28-first-window-progress-with-cancel");
  check(cancellable, "the first window shows its own compaction with Cancel");
  if (cancellable) await ownCancel.click();
  const stopped = await elsewhere.waitFor({ state: "hidden", timeout: 60_000 }).then(() => true, () => false);
  await watcher.shot("29-second-window-after-cancel");
  check(stopped, "the first window's Cancel stops the compaction: the second window's progress ends");
  const cancelledTooltip = await tooltipOf(page, statusItem, "Not compacted");
  await shot("30-cancelled-compaction-tooltip");
  check(
    /Not compacted: the last compaction was cancelled\. Compact Now runs it again\./.test(cancelledTooltip),
    `after the Cancel its tooltip says the compaction was cancelled and what to do (${JSON.stringify(cancelledTooltip.slice(0, 400))})`,
  );
  await watcher.page.close();

  // What the tooltip advised: Compact Now, with the service answering again.
  summarizer("answer");
  await page.mouse.move(10, 500);
  await palette("Notifications: Clear All Notifications");
  await statusItem.click();
  await quickRow("Compact Now").waitFor({ timeout: 15_000 });
  await quickRow("Compact Now").click();
  await quickInput.locator("input.input[placeholder*='failing test']").waitFor();
  await quickInput.locator("input.input").press("Enter");
  const compactedAgain = await until(() => [...seenToasts.values()].find((t) => /contextd: compacted checks summarized elsewhere/.test(t.text)), "the compaction's result", 60_000).catch(() => undefined);
  await until(async () => !((await statusItem.getAttribute("class")) ?? "").includes("error-kind"), "the item back to normal", 15_000).catch(() => {});
  await shot("31-compacted-after-advice");
  check(Boolean(compactedAgain) && !((await statusItem.getAttribute("class")) ?? "").includes("error-kind"), `Compact Now, as advised, compacts the session and the item is no longer red (${compactedAgain?.text})`);
} catch (error) {
  failures.push(`exception: ${error.message.split("\n")[0]}`);
  console.log(`FAIL exception: ${error.stack}`);
  await shot("99-failure");
} finally {
  console.log(`     notifications seen: ${JSON.stringify([...seenToasts.keys()])}`);
  console.log(`     page errors: ${JSON.stringify(pageErrors.slice(0, 10))}`);
  await browser.close();
  console.log(failures.length ? `${failures.length} check(s) failed: ${failures.join("; ")}` : `all checks passed (${elapsed()})`);
  process.exit(failures.length ? 1 : 0);
}
