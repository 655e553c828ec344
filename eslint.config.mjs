import { configWithoutCloudSupport } from '@n8n/node-cli/eslint';

// Rules switched off, each narrowly (docs/development.md, "Linting", lists them with the reasons):
// - The cloud-support preset is not used: the nodes need runtime dependencies (jsonata, luxon),
//   which n8n Cloud's verified-node rules forbid, and for the same reason no-runtime-dependencies is
//   off for package.json. Self-hosted community installs are supported.
// - core/** is plain TypeScript that imports nothing from n8n by design, so errors there cannot be
//   NodeApiError/NodeOperationError; the node files translate them (see nodes/shared/errors.ts).
//
// One door to n8n (docs/architecture.md): nodes/shared/n8nDoor.ts is the only file that reads
// anything of n8n beyond n8n-workflow's public interfaces. Everywhere else in nodes/ and credentials/,
// a node context may not be cast (`this as …`, `context as …`), and n8n's internals may not be named.
const N8N_INTERNALS =
	'^(__dataChanged|additionalData|additionalKeys|contextData|customData|executionData|executionStack|hooks|nodeExecutionStack|runExecutionData|saveFailedExecution|staticData|workflow)$';
const CONTEXT_NAMES = '^(context|ctx|[a-zA-Z]*Context|[a-zA-Z]*Functions)$';
const THE_DOOR = 'n8n internals are read only in nodes/shared/n8nDoor.ts (docs/architecture.md)';
const oneDoor = [
	'error',
	{
		selector: "TSAsExpression[expression.type='ThisExpression']",
		message: `Do not cast a node context: ${THE_DOOR}.`,
	},
	{
		selector: "TSTypeAssertion[expression.type='ThisExpression']",
		message: `Do not cast a node context: ${THE_DOOR}.`,
	},
	{
		selector: `TSAsExpression[expression.type='Identifier'][expression.name=/${CONTEXT_NAMES}/]`,
		message: `Do not cast a node context: ${THE_DOOR}.`,
	},
	{
		selector: `MemberExpression[computed=false][property.name=/${N8N_INTERNALS}/]`,
		message: `This names an internal of n8n: ${THE_DOOR}.`,
	},
	{
		selector: `MemberExpression[computed=true][property.value=/${N8N_INTERNALS}/]`,
		message: `This names an internal of n8n: ${THE_DOOR}.`,
	},
	{
		selector: `TSPropertySignature[key.name=/${N8N_INTERNALS}/]`,
		message: `This names an internal of n8n: ${THE_DOOR}.`,
	},
	{
		selector: "MemberExpression[property.name='length'][object.property.name='emit']",
		message: `This probes n8n's emit: ${THE_DOOR}.`,
	},
	{
		selector: "CallExpression[callee.object.name='Object'][callee.property.name='defineProperty']",
		message: `Redefining what n8n hands over is reading n8n's internals: ${THE_DOOR}.`,
	},
];

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
		files: ['nodes/**/*.ts', 'credentials/**/*.ts'],
		ignores: ['nodes/shared/n8nDoor.ts'],
		rules: { 'no-restricted-syntax': oneDoor },
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
