// @ts-check
// Test fixture of BrainSurgeon's end-to-end tests (e2e/plugin_live_test.go): a tool whose result is the text of a
// file the test wrote, exactly, cut into text blocks of at most 100,000 code points (the host truncates longer
// blocks before any tool-result middleware sees them). It stands in for a tool with a huge output.
import fs from "node:fs";

const BLOCK = 100000;

export default {
  id: "bs-big",
  name: "bs-big",
  description: "e2e fixture: returns the text of a file as the tool result",
  /** @param {any} api */
  register(api) {
    api.registerTool({
      name: "bs_big",
      label: "bs_big",
      description: "Returns the text of the given file.",
      catalogMode: "direct-only",
      parameters: { type: "object", additionalProperties: false, required: ["file"], properties: { file: { type: "string" } } },
      /** @param {string} _id @param {any} params */
      async execute(_id, params) {
        const cps = Array.from(fs.readFileSync(String(params.file), "utf8"));
        const content = [];
        for (let i = 0; i < cps.length; i += BLOCK) content.push({ type: "text", text: cps.slice(i, i + BLOCK).join("") });
        return { content, details: { status: "ok", file: params.file, chars: cps.length } };
      },
    });
  },
};
