// Local stubs for the few types of OpenClaw's plugin SDK the plugin names in its JSDoc, so that `tsc` checks the
// plugin with no node_modules (the plugin imports no SDK module at run time). Only the members the plugin uses are
// declared, as OpenClaw 2026.9.6 declares them in openclaw/plugin-sdk/plugin-entry (OpenClawPluginApi, PluginLogger,
// PluginRegistrationMode); members 2026.7 lacks are optional. Parameters the plugin only passes through are unknown.

declare module "openclaw/plugin-sdk/plugin-entry" {
  /** How OpenClaw loads the plugin this time. */
  export type PluginRegistrationMode = "full" | "discovery" | "tool-discovery" | "setup-only" | "setup-runtime" | "cli-metadata";

  /** The logger OpenClaw hands a plugin. */
  export type PluginLogger = {
    debug?: (message: string) => void;
    info: (message: string) => void;
    warn: (message: string) => void;
    error: (message: string) => void;
  };

  /** What register(api) is given: the plugin's config, a logger, and the calls that register what it offers. */
  export type OpenClawPluginApi = {
    id: string;
    name: string;
    registrationMode: PluginRegistrationMode;
    pluginConfig?: Record<string, unknown>;
    logger: PluginLogger;
    /** A tool, or a factory that makes one for a run's context. */
    registerTool: (tool: unknown, opts?: { name?: string; names?: string[]; optional?: boolean }) => void;
    registerAgentToolResultMiddleware: (
      handler: (event: any, ctx: any) => unknown,
      options?: { runtimes?: string[] },
    ) => void;
    /** A context engine factory (OpenClaw 2026.7.35 and later). */
    registerContextEngine?: (id: string, factory: (ctx: unknown) => unknown) => void;
    /** A hook handler, e.g. before_tool_call. */
    on?: (hookName: string, handler: (event: any, ctx: any) => unknown, opts?: unknown) => void;
  };
}
