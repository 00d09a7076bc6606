// The method tables of this README and of docs/sdks.md list every /v1 route with the Client
// method that calls it (issue 46 item 7: both had left out the policy and approval routes).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { OPERATIONS } from "../dist/index.js";
import { COVERAGE } from "./coverage.mjs";

const rows = (file) => readFileSync(new URL(file, import.meta.url), "utf8").split("\n").filter((l) => /^\| (GET|POST|PUT|PATCH|DELETE) \/v1\//.test(l));

for (const [file, what] of [["../README.md", "README.md"], ["../../../docs/sdks.md", "docs/sdks.md"]]) {
  test(`${what} lists every route with its method`, () => {
    const table = rows(file);
    const missing = [];
    for (const [op, method] of Object.entries(COVERAGE)) {
      const route = `${OPERATIONS[op].method} ${OPERATIONS[op].path}`;
      const row = table.find((l) => l.startsWith(`| ${route} |`));
      if (!row || !new RegExp("`" + method + "[`(]").test(row)) missing.push(`${route} ${method}`);
    }
    assert.deepEqual(missing, []);
    assert.equal(table.length, Object.keys(COVERAGE).length, "one row per route");
  });
}
