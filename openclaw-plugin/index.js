// @ts-check
// Placeholder: the plugin entry is being written.
export default { id: "brainsurgeon", name: "BrainSurgeon", description: "BrainSurgeon", register() {} };
