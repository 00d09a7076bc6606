// Compiles the contracts with the pinned solc (npm `solc`) into build/<Name>.json {abi, bytecode}.
// `node build.mjs --check` fails when the checked-in build differs from a fresh compile.
import solc from 'solc';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const sources = ['TestUSDC.sol', 'FlatFeePayer.sol'];
const input = {
  language: 'Solidity',
  sources: Object.fromEntries(sources.map((f) => [f, { content: readFileSync(join(here, f), 'utf8') }])),
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: 'paris',
    outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
  },
};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (out.errors || []).filter((e) => e.severity === 'error');
if (errors.length) {
  for (const e of errors) console.error(e.formattedMessage);
  process.exit(1);
}
const check = process.argv.includes('--check');
let differs = false;
mkdirSync(join(here, 'build'), { recursive: true });
for (const file of sources) {
  for (const [name, c] of Object.entries(out.contracts[file])) {
    if (name.startsWith('I')) continue; // interfaces
    const json = JSON.stringify({ compiler: solc.version(), abi: c.abi, bytecode: '0x' + c.evm.bytecode.object }, null, 2) + '\n';
    const path = join(here, 'build', name + '.json');
    if (check) {
      let old = '';
      try { old = readFileSync(path, 'utf8'); } catch {}
      if (old !== json) { console.error(`contracts/build/${name}.json differs from a fresh compile: run node contracts/build.mjs and commit`); differs = true; }
    } else {
      writeFileSync(path, json);
      console.log(`wrote build/${name}.json`);
    }
  }
}
process.exit(differs ? 1 : 0);
