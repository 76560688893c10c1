/**
 * The file a file processor names, checked when its Worker is built: a path
 * (relative ones against the working directory) or a `file:` URL must name
 * a readable file. Without the check a Worker with a misspelt path reports
 * ready and then fails every attempt of every job it claims ("Cannot find
 * module"), burning their attempts. BullMQ 6's Worker checks the same at
 * construction (it throws a plain Error); here it is InvalidArgumentError.
 * URLs of other schemes are left to the thread's `import()`.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError } from '@zkq/core';

/** A string the thread pool takes as a URL rather than a path (sandbox/pool.ts). */
const URL_STRING = /^[a-z]+:\/\//i;

/** The local path of a processor given as a path or a URL; undefined for a URL that is not `file:`. */
function localPath(processor: string | URL): string | undefined {
  if (processor instanceof URL) return processor.protocol === 'file:' ? fileURLToPath(processor) : undefined;
  if (URL_STRING.test(processor)) return /^file:/i.test(processor) ? fileURLToPath(processor) : undefined;
  return resolve(processor);
}

/** Throws InvalidArgumentError (argument `processor`) unless a local processor file exists and can be read. */
export function checkProcessorFile(processor: string | URL): void {
  if (processor === '') throw new InvalidArgumentError('processor file path is empty', 'processor');
  let path: string | undefined;
  try {
    path = localPath(processor);
  } catch {
    throw new InvalidArgumentError(`processor is not a local file URL: ${String(processor)}`, 'processor');
  }
  if (path === undefined) return;
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch {
    throw new InvalidArgumentError(`processor file not found: ${path}`, 'processor');
  }
  if (!isFile) throw new InvalidArgumentError(`processor is not a file: ${path}`, 'processor');
  try {
    accessSync(path, constants.R_OK);
  } catch {
    throw new InvalidArgumentError(`processor file cannot be read: ${path}`, 'processor');
  }
}
