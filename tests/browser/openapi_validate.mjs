// The API's contract: the document a real hpo-scheduler serves at
// /api/openapi.json is valid OpenAPI 3.0.3 for a standard validator
// (@apidevtools/swagger-parser, from web/ui's devDependencies: what client
// generators build on). Prints every error it finds.
//
//   node tests/browser/openapi_validate.mjs --scheduler BIN --worker BIN
import { createRequire } from 'node:module';
import path from 'node:path';
import { Cluster, parseArgs, uiDir } from './harness.mjs';

const opts = parseArgs(process.argv.slice(2));
const require = createRequire(path.join(uiDir, 'package.json'));
const SwaggerParser = require('@apidevtools/swagger-parser');

const cluster = new Cluster(opts);
let failed = true;
try {
  await cluster.start({ workers: 0 });
  const res = await fetch(`${cluster.api}/api/openapi.json`);
  if (!res.ok) throw new Error(`GET /api/openapi.json: ${res.status}`);
  const doc = await res.json();
  if (doc.openapi !== '3.0.3') throw new Error(`openapi is ${JSON.stringify(doc.openapi)}, expected "3.0.3"`);
  const paths = Object.keys(doc.paths ?? {}).length;
  const schemas = Object.keys(doc.components?.schemas ?? {}).length;
  // validate() dereferences in place: give it a copy.
  await SwaggerParser.validate(structuredClone(doc));
  if (paths < 10 || schemas < 5) throw new Error(`only ${paths} paths and ${schemas} schemas`);
  console.log(`PASS /api/openapi.json is valid OpenAPI ${doc.openapi}: ${paths} paths, ${schemas} schemas`);
  failed = false;
} catch (e) {
  const details = Array.isArray(e.details) ? e.details : [];
  console.log(`FAIL ${e.message.split('\n')[0]}`);
  for (const d of details) console.log(`  ${(d.instancePath ?? d.path ?? []).toString()}: ${d.message}`);
  if (!details.length) console.log(e.message);
} finally {
  await cluster.stop();
}
process.exit(failed ? 1 : 0);
