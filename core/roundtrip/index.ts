/** Pure core of the Round-Trip Wait node: callback authentication, correlation and timeout. */
export * from './signature';
export * from './correlation';
export * from './timeout';
