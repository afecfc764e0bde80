// client.mjs: tuf-js (an independent TUF client) verifies and downloads one
// target from a TUF repository, so stages/tuf's TestTufJSAgrees can check
// that what piship signs is what another implementation of the
// specification accepts, not only what go-tuf accepts.
//
//   node client.mjs METADATA_URL TARGETS_URL TRUSTED_ROOT TARGET_PATH OUT_FILE
//
// It trusts TRUSTED_ROOT (a root.json the caller pinned) and runs the
// client workflow of the specification through tuf-js's Updater: refresh
// (root chain walk, timestamp, snapshot, targets), getTargetInfo and
// downloadTarget (length and hash check) into OUT_FILE. On success it
// prints the root version it ended on and the target's info as JSON on
// stdout (rootVersion, path, length, hashes, custom) so the caller can
// compare the fields too; on any failure it prints the error on stderr
// and exits 1, and OUT_FILE is not written.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Updater } from 'tuf-js';

async function main(argv) {
  if (argv.length !== 5) {
    throw new Error('usage: node client.mjs METADATA_URL TARGETS_URL TRUSTED_ROOT TARGET_PATH OUT_FILE');
  }
  const [metadataBaseUrl, targetBaseUrl, trustedRoot, targetPath, outFile] = argv;
  // tuf-js keeps its trusted metadata in a directory that must start
  // with the trusted root.json: a fresh one per run, so every run walks
  // the root chain from the pinned root as a first install does.
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'piship-tufjs-'));
  try {
    const metadataDir = path.join(work, 'metadata');
    const targetDir = path.join(work, 'targets');
    fs.mkdirSync(metadataDir);
    fs.mkdirSync(targetDir);
    fs.copyFileSync(trustedRoot, path.join(metadataDir, 'root.json'));
    const updater = new Updater({
      metadataDir,
      metadataBaseUrl,
      targetDir,
      targetBaseUrl,
      // One attempt: a refusal must come from verification, quickly,
      // not after retries against a loopback server.
      config: { fetchRetry: 0, fetchTimeout: 10000 },
    });
    await updater.refresh();
    // tuf-js persists each root it verified while walking the chain: the
    // root version it ends on shows the walk happened.
    const rootVersion = JSON.parse(fs.readFileSync(path.join(metadataDir, 'root.json'), 'utf8')).signed.version;
    const info = await updater.getTargetInfo(targetPath);
    if (!info) {
      throw new Error(`target ${targetPath} is not in the repository's targets metadata`);
    }
    // Download into the work directory first, then rename: OUT_FILE
    // exists only once tuf-js checked the bytes.
    const tmp = path.join(targetDir, 'download');
    await updater.downloadTarget(info, tmp);
    fs.renameSync(tmp, outFile);
    const out = { rootVersion, path: info.path, length: info.length, hashes: info.hashes, custom: info.custom };
    process.stdout.write(JSON.stringify(out) + '\n');
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`tuf-js: ${err && err.name ? err.name + ': ' : ''}${err && err.message ? err.message : err}\n`);
  process.exit(1);
});
