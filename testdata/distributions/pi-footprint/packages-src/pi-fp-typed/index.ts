import { bye } from "fp-words";

export default function (pi: { registerCommand(name: string, options: object): void }): void {
  pi.registerCommand("fp-typed", { description: "pi-fp-typed says " + bye, handler: async () => {} });
}
