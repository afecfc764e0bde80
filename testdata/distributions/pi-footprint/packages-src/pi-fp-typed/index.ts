import { describe } from "./lib/describe";

export default function (pi: { registerCommand(name: string, options: object): void }): void {
  pi.registerCommand("fp-typed", { description: describe(), handler: async () => {} });
}
