/** Pure core of the Round-Trip Wait node: callback authentication, correlation and timeout. */
export * from './signature';
export * from './correlation';
export * from './timeout';
export * from './replay';
export * from './settings';
export * from './waitRecord';
export * from './dispatch';
export * from './resumeOnce';
export * from './condition';
export * from './fixedUrl';
export * from './earlyCallbacks';
export * from './proof';
