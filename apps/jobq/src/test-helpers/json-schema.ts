import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';

/** docs/json/, where the JSON Schemas of the --json documents live (docs/json-output.md). */
export const SCHEMA_DIR = join(__dirname, '..', '..', '..', '..', 'docs', 'json');

const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
const compiled = new Map<string, ValidateFunction>();

/** The validator of docs/json/NAME.schema.json. */
export function schemaValidator(name: string): ValidateFunction {
  let validate = compiled.get(name);
  if (validate === undefined) {
    validate = ajv.compile(JSON.parse(readFileSync(join(SCHEMA_DIR, `${name}.schema.json`), 'utf8')) as object);
    compiled.set(name, validate);
  }
  return validate;
}

/** What is wrong with `doc` against docs/json/NAME.schema.json, one line per problem ([] when it is valid). */
export function schemaErrors(name: string, doc: unknown): string[] {
  const validate = schemaValidator(name);
  if (validate(doc)) return [];
  return (validate.errors ?? []).map(
    (e) =>
      `${name}: ${e.instancePath || '/'} ${e.message ?? ''}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`,
  );
}
