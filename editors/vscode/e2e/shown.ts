// What the extension shows, for the workbench driver (bundled by the test): the status bar's
// text and the Session Tree's rows, computed by the extension's own pure code.
export { agentPointLine, figureText, formatPercent, formatTokens, statusText, truncate } from "../src/format";
export { ENTRY_LABEL_LENGTH, entryText } from "../src/treeItems";
