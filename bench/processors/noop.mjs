/** File processor for the threaded drain: does nothing. Plain JavaScript, as threads load it without a TypeScript loader. */
export default async function noop() {
  return null;
}
