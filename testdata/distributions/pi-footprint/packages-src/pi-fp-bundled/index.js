import { register } from "./lib/commands.js";

export default function (pi) {
  register(pi);
}
