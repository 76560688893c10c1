/** Type-level assertions: they cost nothing at runtime and fail the type check when wrong. */

/** Exactly equal types (not merely mutually assignable). */
export type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** Compiles only when `T` is `true`. */
export type Expect<T extends true> = T;

/** `A` can be assigned to `B`. */
export type Assignable<A, B> = [A] extends [B] ? true : false;

/** Compiles only when `value`'s type is exactly `T`: `expectType<string>()(s)`. */
export function expectType<T>() {
  return <V>(value: V & (Equal<V, T> extends true ? unknown : never)): V => value;
}

/** Compiles only when `value` can be assigned to `T`. */
export function expectAssignable<T>(value: T): T {
  return value;
}
