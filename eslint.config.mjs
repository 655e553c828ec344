import { configWithoutCloudSupport } from '@n8n/node-cli/eslint';

// Rules switched off, each narrowly (docs/development.md, "Linting", lists them with the reasons):
// - The cloud-support preset is not used: the nodes need runtime dependencies (jsonata, luxon),
//   which n8n Cloud's verified-node rules forbid, and for the same reason no-runtime-dependencies is
//   off for package.json. Self-hosted community installs are supported.
// - core/** is plain TypeScript that imports nothing from n8n by design, so errors there cannot be
//   NodeApiError/NodeOperationError; the node files translate them (see nodes/shared/errors.ts).
export default [
	...configWithoutCloudSupport,
	{
		files: ['package.json'],
		rules: { '@n8n/community-nodes/no-runtime-dependencies': 'off' },
	},
	{
		files: ['core/**/*.ts'],
		rules: { '@n8n/community-nodes/require-node-api-error': 'off' },
	},
	{
		ignores: [
			'dist/**',
			'test/**',
			'bench/**',
			'scripts/**',
			'.cache/**',
			'.toolchain/**',
			'.n8n-dev*/**',
			'jest.config.js',
			'gulpfile.js',
			'**/*.test.ts',
		],
	},
];
