// Checks testdata/signing/vectors.json with nothing but Node.js built-ins:
//   node testdata/signing/verify-vectors.mjs [path/to/vectors.json]
// For every vector it recomputes the canonical JSON from `value` using only JSON.parse,
// a recursive key sort and JSON.stringify, compares it with `canonical`, and verifies
// `signature` (base64 Ed25519 over the UTF-8 canonical bytes) with `publicKeyPem`.
// Envelope vectors are also checked the way a partner does it: remove serviceSignature
// from `envelope`, canonicalize the rest, verify.
// Exits 1 on any mismatch. The key is TEST ONLY.
import { readFileSync } from 'node:fs';
import { verify } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

// canonicalize returns the canonical JSON text of a value obtained from JSON.parse.
// The object case builds the text itself: JSON.stringify of a re-built object would put
// integer-like keys ("1", "10") first in numeric order, whatever the insertion order.
// Array.prototype.sort() without a comparator orders strings by UTF-16 code units, which
// is the order the spec (RFC 8785) requires.
export function canonicalize(value) {
  if (Array.isArray(value)) {
    return '[' + value.map(canonicalize).join(',') + ']';
  }
  if (value !== null && typeof value === 'object') {
    return '{' + Object.keys(value).sort()
      .filter((k) => value[k] !== undefined)
      .map((k) => JSON.stringify(k) + ':' + canonicalize(value[k]))
      .join(',') + '}';
  }
  return JSON.stringify(value); // strings, finite numbers (ECMAScript form), true, false, null
}

export function verifySignature(canonical, signatureB64, publicKeyPem) {
  const sig = Buffer.from(signatureB64, 'base64');
  if (sig.length !== 64) return false;
  return verify(null, Buffer.from(canonical, 'utf8'), publicKeyPem, sig);
}

const path = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), 'vectors.json');
const file = JSON.parse(readFileSync(path, 'utf8'));
let passed = 0;
let failed = 0;
for (const v of file.vectors) {
  const problems = [];
  const canonical = canonicalize(v.value);
  if (canonical !== v.canonical) {
    problems.push(`canonical mismatch\n    node: ${canonical}\n    file: ${v.canonical}`);
  }
  if (!verifySignature(v.canonical, v.signature, file.publicKeyPem)) {
    problems.push('signature does not verify');
  }
  if (v.envelope !== undefined) {
    const { serviceSignature, ...rest } = v.envelope;
    const envCanonical = canonicalize(rest);
    if (envCanonical !== v.canonical) {
      problems.push(`envelope canonical mismatch\n    node: ${envCanonical}\n    file: ${v.canonical}`);
    }
    if (serviceSignature !== v.signature || !verifySignature(envCanonical, serviceSignature, file.publicKeyPem)) {
      problems.push('envelope serviceSignature does not verify');
    }
  }
  if (problems.length === 0) {
    passed++;
  } else {
    failed++;
    console.log(`FAIL ${v.name}:\n  ${problems.join('\n  ')}`);
  }
}
console.log(`signing vectors: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
