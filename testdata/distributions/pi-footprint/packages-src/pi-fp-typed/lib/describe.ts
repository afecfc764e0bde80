import { bye } from "fp-words";
import { prefix } from "./prefix.ts";

export function describe(): string {
  return prefix + " " + bye;
}
