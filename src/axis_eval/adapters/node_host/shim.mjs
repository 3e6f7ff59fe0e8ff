// ESM face of shim.cjs: `import { createAgentAdapter } from "@netlify/axis"` lands here.
import shim from "./shim.cjs";

export const createAgentAdapter = shim.createAgentAdapter;
export const createAcpBasedAdapter = shim.createAcpBasedAdapter;
export default shim;
