// The README quickstarts are the code the tests run: a fenced ```js block preceded by
// `<!-- quickstart: NAME -->` is read out of a package's README and run as an ES module,
// either as is (in a project where the package is installed: pack-check.mjs) or with the
// package name mapped to the package's built dist (the package's own tests).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export function quickstarts(readmePath) {
  const text = readFileSync(readmePath, "utf8");
  const out = {};
  for (const m of text.matchAll(/<!-- quickstart: ([\w-]+) -->\s*```js\n([\s\S]*?)```/g)) out[m[1]] = m[2];
  return out;
}

// start runs code as a module in dir (default a temp dir) with env added; `map` rewrites
// import specifiers (package name -> file). It resolves to { child, output(), exited }.
export function start(code, { dir, env = {}, map = {} } = {}) {
  for (const [name, file] of Object.entries(map)) code = code.replaceAll(`"${name}"`, JSON.stringify(pathToFileURL(file).href));
  dir ??= mkdtempSync(join(tmpdir(), "quickstart-"));
  const file = join(dir, `quickstart-${Date.now()}-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(file, code);
  const child = spawn(process.execPath, [file], { cwd: dir, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d) => (out += d));
  child.stderr.setEncoding("utf8").on("data", (d) => (out += d));
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, output: () => out, exited };
}

// run runs code to the end and returns its output; it throws when the exit code is not 0.
export async function run(code, opts) {
  const p = start(code, opts);
  const status = await p.exited;
  if (status !== 0) throw new Error(`quickstart exited ${status}:\n${p.output()}`);
  return p.output();
}
