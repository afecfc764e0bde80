import { words } from "fp-words";
import { describe } from "./describe.js";

export function register(pi) {
  pi.registerCommand("fp-bundled", { description: describe(words), handler: async () => {} });
}
