/** Registers cleanups that run when a test ends, last-registered first (clients close before the proxy they talk through). */
export type Defer = (fn: () => unknown) => void;

export function cleanups(t: { after(fn: () => unknown): void }): Defer {
  const fns: (() => unknown)[] = [];
  t.after(async () => {
    for (const fn of fns.reverse()) await fn();
  });
  return (fn) => {
    fns.push(fn);
  };
}
