/** What this extension contributes, read from its package.json. */
import { contributes } from "../package.json";

export interface SettingSchema {
  default?: unknown;
  scope?: string;
}

/** Every `contextd.*` setting, whichever titled section of the settings editor holds it. */
export const SETTING_SCHEMAS: Readonly<Record<string, SettingSchema>> = Object.assign(
  {},
  ...(contributes.configuration as unknown as Array<{ properties: Record<string, SettingSchema> }>).map((section) => section.properties),
);
