/**
 * The parts of the `vscode` module that statusBar.ts uses, recording what the
 * extension shows. Tests read `createdItems` to see the status bar.
 */

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class MarkdownString {
  constructor(
    readonly value: string,
    readonly supportThemeIcons = false,
  ) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class FakeStatusBarItem {
  text = "";
  tooltip: MarkdownString | string | undefined;
  backgroundColor: ThemeColor | undefined;
  command: unknown;
  name: string | undefined;
  accessibilityInformation: { label: string } | undefined;
  visible = false;
  disposed = false;

  constructor(
    readonly id: string,
    readonly alignment: StatusBarAlignment,
    readonly priority: number,
  ) {}

  show(): void {
    this.visible = true;
  }

  hide(): void {
    this.visible = false;
  }

  dispose(): void {
    this.disposed = true;
    this.visible = false;
  }
}

export const createdItems: FakeStatusBarItem[] = [];

export const window = {
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number): FakeStatusBarItem {
    const item = new FakeStatusBarItem(id, alignment, priority);
    createdItems.push(item);
    return item;
  },
};
