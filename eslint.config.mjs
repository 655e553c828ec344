import { config } from '@n8n/node-cli/eslint';

export default [
	...config,
	{ ignores: ['dist/**', 'test/**', 'bench/**', 'scripts/**', '.cache/**', '.toolchain/**', 'jest.config.js', 'gulpfile.js', '**/*.test.ts'] },
];
