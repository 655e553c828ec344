// Runs the longest e2e suites first, so that with several jest workers the last suite to start is a short
// one. Jest's default order is by recorded duration, and by file size on a fresh clone (CI), where the
// longest suites (the chaos run, the start script's kills) are among the smallest files.
const Sequencer = require('@jest/test-sequencer').default;
const { basename } = require('node:path');

/**
 * Seconds each suite took in stop 32's CI (2026-12-02, on CI's 2-core machine, the three lanes side by
 * side; the queue-mode start script's suite from stop 31's), longest first. Suites not named here run
 * last.
 */
const SECONDS = {
	'startScriptQueue.test.ts': 670,
	'startScript.test.ts': 500,
	'pollTrigger.test.ts': 494,
	'pollRunSettlement.test.ts': 426,
	'durableScheduleTrigger.test.ts': 425,
	// The local npm test of 2026-12-03 04:14 (with the 200-item chaos cases).
	'chaos.test.ts': 735,
	'roundTripWait.test.ts': 271,
	// The local npm test of 2026-12-03 04:14.
	'historyStore.test.ts': 837,
	// In the queue lane since 2026-12-03 (its three sources at once: 656 s beside other e2e runs).
	'owedItems.test.ts': 656,
	// 298 s alone (its n8n and servers included, 2026-12-03). In the 2.41 lane (on 1.123 in the 1.x lane).
	'owedSources.test.ts': 300,
	'pagination.test.ts': 238,
	// Not yet in a CI run: 472 s for three of its four tests beside other e2e runs, 161 s for two alone
	// (2026-12-03).
	'retryPolicy.test.ts': 500,
	// Not yet in a CI run: 108 to 147 s alone on the 2-core machine (2026-12-03).
	'roundTripFixedUrl.test.ts': 150,
	'sftpSource.test.ts': 228,
	'editor.test.ts': 195,
	'sqlSource.test.ts': 185,
	'imapTriage.test.ts': 135,
	'examples.test.ts': 67,
	'credentials.test.ts': 61,
	'imapConnector.test.ts': 8,
	'foundation.test.ts': 6,
};

class LongestFirstSequencer extends Sequencer {
	sort(tests) {
		const seconds = (test) => SECONDS[basename(test.path)] ?? 0;
		return [...super.sort(tests)].sort((a, b) => seconds(b) - seconds(a));
	}
}

module.exports = LongestFirstSequencer;
