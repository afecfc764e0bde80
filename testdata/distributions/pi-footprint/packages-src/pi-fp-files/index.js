import { readFileSync } from "node:fs";
import { hello } from "fp-words";

const banner = readFileSync(new URL("./banner.txt", import.meta.url), "utf8").trim();

export default function (pi) {
  pi.registerCommand("fp-files", { description: banner + " " + hello, handler: async () => {} });
}
