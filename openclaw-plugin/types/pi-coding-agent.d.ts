// Local stubs for the few types of pi's extension API (@mariozechner/pi-coding-agent) that pi.js names in its JSDoc,
// so that `tsc` checks the extension with no node_modules (it imports nothing of pi at run time). Only the members
// pi.js uses are declared, as pi 0.70.6 and 0.73.1 declare them in dist/core/extensions/types.d.ts; message and
// schema types pi.js only passes through are unknown.

declare module "@mariozechner/pi-coding-agent" {
  /** A text or image content block of a tool result. */
  export type TextContent = { type: "text"; text: string };
  export type ImageContent = { type: "image"; data: string; mimeType: string };

  /** The read-only session manager handlers see (ReadonlySessionManager). */
  export interface ReadonlySessionManager {
    getSessionId(): string;
    /** The session's JSONL file; undefined for a session that is not persisted (--no-session). */
    getSessionFile(): string | undefined;
    /** The directory of the session's file: <agentDir>/sessions/--<cwd>--/ by default. */
    getSessionDir(): string;
    getCwd(): string;
  }

  /** The UI handlers may use; in print and JSON mode its methods do nothing. */
  export interface ExtensionUIContext {
    notify(message: string, type?: "info" | "warning" | "error"): void;
  }

  /** What every handler and tool is given. */
  export interface ExtensionContext {
    ui: ExtensionUIContext;
    /** false in print (-p) and JSON mode. */
    hasUI: boolean;
    cwd: string;
    sessionManager: ReadonlySessionManager;
    /** The current model (contextWindow in tokens), undefined when none is selected. */
    model: { id: string; provider?: string; contextWindow?: number } | undefined;
    signal: AbortSignal | undefined;
  }

  /** What a tool's execute returns. */
  export interface AgentToolResult<TDetails = unknown> {
    content: (TextContent | ImageContent)[];
    details: TDetails;
  }

  /** What registerTool takes (parameters: TypeBox or plain JSON Schema, which pi-ai validates too). */
  export interface ToolDefinition {
    name: string;
    label: string;
    description: string;
    promptSnippet?: string;
    promptGuidelines?: string[];
    parameters: unknown;
    execute(
      toolCallId: string,
      params: unknown,
      signal: AbortSignal | undefined,
      onUpdate: unknown,
      ctx: ExtensionContext,
    ): Promise<AgentToolResult>;
  }

  export interface SessionStartEvent {
    type: "session_start";
    reason: "startup" | "reload" | "new" | "resume" | "fork";
    previousSessionFile?: string;
  }

  /** Fired before each LLM call with a deep copy of the messages (AgentMessage[]). */
  export interface ContextEvent {
    type: "context";
    messages: unknown[];
  }
  export interface ContextEventResult {
    messages?: unknown[];
  }

  export interface BeforeAgentStartEvent {
    type: "before_agent_start";
    prompt: string;
    systemPrompt: string;
  }
  export interface BeforeAgentStartEventResult {
    systemPrompt?: string;
  }

  /** Fired after a tool ran, before its result message is emitted and stored. */
  export interface ToolResultEvent {
    type: "tool_result";
    toolCallId: string;
    toolName: string;
    input: Record<string, unknown>;
    content: (TextContent | ImageContent)[];
    details: unknown;
    isError: boolean;
  }
  /** A partial patch of the result: omitted members keep their values. */
  export interface ToolResultEventResult {
    content?: (TextContent | ImageContent)[];
    details?: unknown;
    isError?: boolean;
  }

  /** Fired before pi compacts a session; a result with compaction is the compaction pi writes. */
  export interface SessionBeforeCompactEvent {
    type: "session_before_compact";
    preparation: { firstKeptEntryId: string; tokensBefore: number };
    branchEntries: { id: string; type: string }[];
    customInstructions?: string;
    signal: AbortSignal;
  }
  export interface SessionBeforeCompactResult {
    cancel?: boolean;
    compaction?: { summary: string; firstKeptEntryId: string; tokensBefore: number; details?: unknown };
  }

  export type ExtensionHandler<E, R = undefined> = (event: E, ctx: ExtensionContext) => Promise<R | void> | R | void;

  /** What the extension's default export is given. */
  export interface ExtensionAPI {
    on(event: "session_start", handler: ExtensionHandler<SessionStartEvent>): void;
    on(event: "context", handler: ExtensionHandler<ContextEvent, ContextEventResult>): void;
    on(event: "before_agent_start", handler: ExtensionHandler<BeforeAgentStartEvent, BeforeAgentStartEventResult>): void;
    on(event: "tool_result", handler: ExtensionHandler<ToolResultEvent, ToolResultEventResult>): void;
    on(event: "session_before_compact", handler: ExtensionHandler<SessionBeforeCompactEvent, SessionBeforeCompactResult>): void;
    registerTool(tool: ToolDefinition): void;
  }
}
