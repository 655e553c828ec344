// Runs the longest e2e suites first, so that with several jest workers the last suite to start is a short
// one. Jest's default order is by recorded duration, and by file size on a fresh clone (CI), where the
// longest suites (the chaos run, the start script's kills) are among the smallest files.
const Sequencer = require('@jest/test-sequencer').default;
const { basename } = require('node:path');

/**
 * Seconds each suite took in stop 43's CI (2026-12-03, on CI's 2-core machine, the three lanes side by
 * side; owedItems as the queue lane's 2.41 suite, pollRunSettlement, sqlSource, credentials and
 * imapTriage as the 1.123 lane's). The queue-mode start script's suite from stop 31's; s3Source's and
 * ftpSource's from local runs (2026-12-03, busy machine). Suites not named
 * here run last.
 */
const SECONDS = {
	'chaos.test.ts': 883,
	'startScriptQueue.test.ts': 670,
	'historyStore.test.ts': 619,
	'owedSources.test.ts': 585,
	'owedItems.test.ts': 446,
	'durableScheduleTrigger.test.ts': 442,
	'pollTrigger.test.ts': 387,
	'pollRunSettlement.test.ts': 362,
	'retryPolicy.test.ts': 272,
	'pagination.test.ts': 220,
	'startScript.test.ts': 217,
	'ftpSource.test.ts': 190,
	's3Source.test.ts': 186,
	'sqlSource.test.ts': 161,
	'roundTripWait.test.ts': 158,
	'examples.test.ts': 133,
	'sftpSource.test.ts': 126,
	'credentials.test.ts': 97,
	'imapTriage.test.ts': 77,
	'roundTripFixedUrl.test.ts': 75,
	'editor.test.ts': 72,
	'foundation.test.ts': 9,
	'imapConnector.test.ts': 7,
};

class LongestFirstSequencer extends Sequencer {
	sort(tests) {
		const seconds = (test) => SECONDS[basename(test.path)] ?? 0;
		return [...super.sort(tests)].sort((a, b) => seconds(b) - seconds(a));
	}
}

module.exports = LongestFirstSequencer;
