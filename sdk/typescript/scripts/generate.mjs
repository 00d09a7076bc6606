// Generates src/openapi.ts from the service's /openapi.json with openapi-typescript.
//   node scripts/generate.mjs            starts the binary in SWITCHBOARD_BIN and writes the file
//   node scripts/generate.mjs --check    fails when the checked-in file differs
// The document's servers (the test server's address) are replaced by a fixed placeholder so
// the output depends only on the API.
import openapiTS, { astToString } from "openapi-typescript";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const target = fileURLToPath(new URL("../src/openapi.ts", import.meta.url));

export async function generate(doc) {
  const normalized = { ...doc, servers: [{ url: "https://switchboard.example" }] };
  const ast = await openapiTS(normalized, { alphabetize: true });
  return "// Generated from the Switchboard /openapi.json by openapi-typescript (scripts/generate.mjs).\n// Do not edit by hand: run `npm run generate` (sdk/run checks it is current).\n\n" + astToString(ast);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { startServer } = await import("../../harness.mjs");
  const server = await startServer();
  try {
    const doc = await (await fetch(server.url + "/openapi.json")).json();
    const text = await generate(doc);
    if (process.argv.includes("--check")) {
      if (readFileSync(target, "utf8") !== text) {
        console.error("src/openapi.ts is out of date with /openapi.json: run `npm run generate` in sdk/typescript");
        process.exitCode = 1;
      }
    } else {
      writeFileSync(target, text);
      console.log(`wrote ${target}`);
    }
  } finally {
    await server.stop();
  }
}
