/**
 * Hand-off documents shown as read-only virtual documents: nothing to save, and nothing
 * VS Code restores as an unsaved buffer after a reload.
 */
import * as vscode from "vscode";

export const HANDOFF_SCHEME = "contextd-handoff";

export class HandoffDocuments implements vscode.TextDocumentContentProvider {
  private readonly documents = new Map<string, string>();
  private count = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return (
      this.documents.get(uri.path) ??
      "This hand-off document was shown in an earlier window; it is the first entry of the new session."
    );
  }

  /** `title` names the tab ("Hand-off to finish the fix"); it is kept short and unique. */
  async show(text: string, title = "Hand-off"): Promise<void> {
    const count = ++this.count;
    const name = title.replace(/[\\/:*?"<>|#%]/g, " ").replace(/\s+/g, " ").trim().slice(0, 60);
    const path = `/${count > 1 ? `${name} (${count})` : name}.md`;
    this.documents.set(path, text);
    const document = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: HANDOFF_SCHEME, path }));
    await vscode.languages.setTextDocumentLanguage(document, "markdown");
    await vscode.window.showTextDocument(document, { preview: true });
  }
}
