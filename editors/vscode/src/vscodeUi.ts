/** The commands' Ui, implemented with VS Code's windows, pickers and notifications. */
import * as vscode from "vscode";
import type { SettingsStore, Ui } from "./ui";
import { HandoffDocuments } from "./handoffDocuments";
import { SECTION } from "./settings";

/** The read-only documents Show Document opens; extension.ts registers their provider. */
export const handoffDocuments = new HandoffDocuments();

/** The walkthrough package.json contributes, as `publisher.name#id`. */
const WALKTHROUGH = "contextd.contextd#contextd.gettingStarted";

export const vscodeUi: Ui = {
  async pick(items, options) {
    const quickPick = vscode.window.createQuickPick<(typeof items)[number]>();
    quickPick.items = items;
    quickPick.title = options.title;
    quickPick.placeholder = options.placeholder;
    quickPick.matchOnDescription = true;
    const active = items.find((item) => item.value === options.active);
    if (active) quickPick.activeItems = [active];
    return new Promise((resolve) => {
      quickPick.onDidAccept(() => {
        resolve(quickPick.selectedItems[0]?.value);
        quickPick.hide();
      });
      quickPick.onDidHide(() => {
        resolve(undefined);
        quickPick.dispose();
      });
      quickPick.show();
      // Shown, the quick pick makes its first row active: the row asked for goes after.
      if (active) quickPick.activeItems = [active];
    });
  },

  input(options) {
    return Promise.resolve(
      vscode.window.showInputBox({
        title: options.title,
        prompt: options.prompt,
        placeHolder: options.placeholder,
        value: options.value,
        validateInput: options.validate,
        ignoreFocusOut: true,
      }),
    );
  },

  info(message, options = {}, ...actions) {
    return Promise.resolve(vscode.window.showInformationMessage(message, options, ...actions));
  },

  error(message, ...actions) {
    return Promise.resolve(vscode.window.showErrorMessage(message, ...actions));
  },

  progress(title, task, options = {}) {
    let reported = 0;
    return Promise.resolve(
      vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title, cancellable: options.cancellable ?? true },
        (progress, token) =>
          task(({ message, percentage }) => {
            // VS Code wants increments; the daemon reports where it is.
            const increment = percentage === undefined ? undefined : Math.max(0, percentage - reported);
            if (percentage !== undefined) reported = Math.max(reported, percentage);
            progress.report({ message, increment });
          }, token),
      ),
    );
  },

  showDocument: (text, title) => handoffDocuments.show(text, title),

  async copy(text) {
    await vscode.env.clipboard.writeText(text);
  },

  async openWalkthrough() {
    await vscode.commands.executeCommand("workbench.action.openWalkthrough", WALKTHROUGH, false);
  },
};

export const vscodeSettings: SettingsStore = {
  get: (key) => vscode.workspace.getConfiguration(SECTION).get(key),
  async update(key, value, scope) {
    const configuration = vscode.workspace.getConfiguration(SECTION);
    const inspected = configuration.inspect(key);
    // Change the setting where it is set now, so a workspace value is not shadowed.
    const target =
      scope === "workspace" && vscode.workspace.workspaceFolders?.length
        ? vscode.ConfigurationTarget.Workspace
        : inspected?.workspaceFolderValue !== undefined
        ? vscode.ConfigurationTarget.WorkspaceFolder
        : inspected?.workspaceValue !== undefined
          ? vscode.ConfigurationTarget.Workspace
          : vscode.ConfigurationTarget.Global;
    await configuration.update(key, value, target);
  },
};
