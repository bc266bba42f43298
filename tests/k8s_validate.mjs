// Validates Kubernetes objects against the API's OpenAPI schemas with the npm package
// `kubernetes-models` (its generated JSON-schema validators; no API server).
//   node tests/k8s_validate.mjs NODE_MODULES_DIR DOCS.json
// DOCS.json: a JSON array of objects. Prints one line per object: `ok KIND NAME`,
// `invalid KIND NAME: why`, or `unknown KIND NAME` (a kind the package has no schema for,
// e.g. a custom resource); exits 1 if any is invalid.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, docsFile] = process.argv.slice(2);
const docs = JSON.parse(readFileSync(docsFile, "utf8"));
let invalid = 0;
for (const doc of docs) {
  const [group, version] = doc.apiVersion.includes("/")
    ? doc.apiVersion.split("/")
    : [null, doc.apiVersion];
  const dir = group ? join(modules, "kubernetes-models", group, version)
                    : join(modules, "kubernetes-models", version);
  const name = doc.metadata?.name ?? "?";
  let Model;
  try {
    Model = (await import(pathToFileURL(join(dir, doc.kind + ".js")).href))[doc.kind];
  } catch {
    console.log(`unknown ${doc.kind} ${name}`);
    continue;
  }
  try {
    new Model(doc).validate();
    console.log(`ok ${doc.kind} ${name}`);
  } catch (e) {
    ++invalid;
    console.log(`invalid ${doc.kind} ${name}: ${String(e.message).replace(/\s+/g, " ")}`);
  }
}
process.exit(invalid ? 1 : 0);
