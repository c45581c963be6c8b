import { existsSync, readFileSync } from 'node:fs';
import { ValidationError } from '../events/errors.js';

/** A JSON file a user gave (`what`: "config file", "request file"), parsed; one line when it is missing or not JSON. */
export function readJsonFile(path: string, what: string): unknown {
  if (!existsSync(path)) throw new ValidationError(`${what} ${path} does not exist`);
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ValidationError(`${what} ${path} is not valid JSON: ${(err as Error).message}`);
  }
}
