export { hello } from "./lib/hello.js";
export { bye } from "./lib/bye.js";
export { words } from "./lib/words.js";
export { join } from "./lib/join.js";
export { upper } from "./lib/upper.js";
export default "fp-words";
