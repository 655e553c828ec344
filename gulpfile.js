// Copies what tsc does not emit (SVG icons, codex JSON) next to the compiled nodes and credentials.
const { src, dest, task } = require('gulp');

task('build:assets', () =>
	src(['nodes/**/*.{svg,png,json}', 'credentials/**/*.{svg,png}'], {
		base: '.',
		encoding: false,
	}).pipe(dest('dist/')),
);
