/*
 * check_grammar.c - constrained sampling: JSON-schema grammars accept the
 * JSON they describe and refuse what they do not, byte by byte; a random
 * "model" (seeded random logits, masked by the grammar, over stories260K's
 * vocabulary) always writes JSON that parses and matches its schema, and a
 * forced tool call in every template format that the reply parser reads
 * back as that call; keywords the grammar cannot enforce are refused.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/grammar.h"
#include "serve/msgparse.h"
#include "strata.h"
#include "testutil.h"

static struct strata_engine *g_eng;
static struct strata_vtrie *g_trie;

static struct strata_grammar *compile(const char *schema)
{
	cJSON *s = schema ? cJSON_Parse(schema) : NULL;
	struct strata_grammar *g;
	char why[300];
	int rc = strata_grammar_json(s, &g, why, sizeof(why));

	ck_assert_msg(rc == 0, "%s: %s", schema, why);
	cJSON_Delete(s);
	return g;
}

/* Does g accept text whole (every byte, and complete at the end)? */
static int accepts(struct strata_grammar *g, const char *text)
{
	struct strata_grammar_run *r;
	int ok;

	ck_assert_int_eq(strata_grammar_run_new(g, g_trie, &r), 0);
	ok = strata_grammar_accept(r, text, strlen(text)) == 0 && strata_grammar_complete(r);
	strata_grammar_run_free(r);
	return ok;
}

START_TEST(accept_and_refuse)
{
	static const struct {
		const char *schema, *good[4], *bad[4];
	} cases[] = {
		{ "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":"
		  "\"string\"}},\"required\":[\"a\"]}",
		  { "{\"a\": 1}", "{\"a\":-20,\"b\":\"x\\\"y\"}", "{ \"a\": 0, \"b\": \"\u00e9\" }", NULL },
		  { "{\"b\": \"x\"}", "{\"a\": 01}", "{\"a\": 1,}", "{\"b\":\"x\",\"a\":1}" } },
		{ "{\"type\":\"array\",\"items\":{\"type\":\"boolean\"},\"minItems\":1,\"maxItems\":2}",
		  { "[true]", "[false, true]", NULL }, { "[]", "[true,true,true]", "[1]", NULL } },
		{ "{\"enum\":[\"red\",\"green\",3,null]}", { "\"red\"", "3", "null", NULL },
		  { "\"blue\"", "\"Red\"", NULL } },
		{ "{\"anyOf\":[{\"type\":\"number\"},{\"type\":\"string\",\"maxLength\":2}]}",
		  { "1.5e3", "\"ab\"", "-0.25", NULL }, { "\"abc\"", "1.", "true", NULL } },
		{ "{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},"
		  "\"next\":{\"anyOf\":[{\"$ref\":\"#/$defs/n\"},{\"type\":\"null\"}]}},\"required\":"
		  "[\"v\",\"next\"]}},\"$ref\":\"#/$defs/n\"}",
		  { "{\"v\":1,\"next\":{\"v\":2,\"next\":null}}", NULL },
		  { "{\"v\":1,\"next\":{\"v\":2}}", NULL } },
		{ "{\"type\":\"string\",\"format\":\"date-time\"}",
		  { "\"2026-01-31T12:00:00Z\"", "\"2026-01-31T12:00:00.25+02:00\"", NULL },
		  { "\"2026-1-31T12:00:00Z\"", "\"yesterday\"", NULL } },
		{ "{\"type\":[\"string\",\"null\"],\"minLength\":2}", { "\"ab\"", "null", NULL },
		  { "\"a\"", NULL } },
		{ NULL, { "{}", "{\"x\": [1, {\"y\": null}]}", NULL }, { "[]", "1", NULL } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct strata_grammar *g = compile(cases[i].schema);

		for (int k = 0; k < 4 && cases[i].good[k]; k++)
			ck_assert_msg(accepts(g, cases[i].good[k]), "%s refused %s", cases[i].schema,
				      cases[i].good[k]);
		for (int k = 0; k < 4 && cases[i].bad[k]; k++)
			ck_assert_msg(!accepts(g, cases[i].bad[k]), "%s took %s", cases[i].schema,
				      cases[i].bad[k]);
		strata_grammar_free(g);
	}
}
END_TEST

START_TEST(refusals)
{
	static const char *const bad[] = {
		"{\"type\":\"string\",\"pattern\":\"^a\"}", "{\"type\":\"integer\",\"minimum\":1}",
		"{\"type\":\"string\",\"format\":\"email\"}", "{\"allOf\":[{},{}]}",
		"{\"$ref\":\"http://example.com/s.json\"}", "{\"type\":\"tuple\"}",
		"{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"b\"]}",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *s = cJSON_Parse(bad[i]);
		struct strata_grammar *g;
		char why[300];

		ck_assert_msg(strata_grammar_json(s, &g, why, sizeof(why)) == -EINVAL, "%s", bad[i]);
		ck_assert(why[0]);
		cJSON_Delete(s);
	}
}
END_TEST

/* A random model under the grammar: the text it writes (malloc'd), complete or NULL. */
static char *walk(struct strata_grammar *g, unsigned seed, int max_tokens)
{
	int32_t n = strata_engine_n_vocab(g_eng);
	float *logits = malloc((size_t)n * sizeof(*logits));
	struct strata_grammar_run *r;
	char *out = calloc(1, 65536), piece[256];
	size_t len = 0;

	ck_assert_int_eq(strata_grammar_run_new(g, g_trie, &r), 0);
	for (int t = 0; t < max_tokens; t++) {
		int32_t best = -1;
		int pl;

		for (int32_t i = 0; i < n; i++) {
			seed = seed * 1664525u + 1013904223u;
			logits[i] = (float)(seed >> 8) / (float)(1u << 24);
			/* a model that closes what it opened sooner or later */
			pl = strata_engine_token_piece(g_eng, i, piece, sizeof(piece));
			if (pl > 0 && pl < (int)sizeof(piece) && memchr(piece, '"', (size_t)pl))
				logits[i] += 0.3f;
			if (strata_engine_token_is_eog(g_eng, i))
				logits[i] += 0.5f;
		}
		ck_assert_int_eq(strata_grammar_mask(r, logits, n), 0);
		for (int32_t i = 0; i < n; i++)
			if (logits[i] != -INFINITY && (best < 0 || logits[i] > logits[best]))
				best = i;
		ck_assert_int_ge(best, 0);
		if (strata_engine_token_is_eog(g_eng, best)) {
			ck_assert(strata_grammar_complete(r));
			strata_grammar_run_free(r);
			free(logits);
			return out;
		}
		pl = strata_engine_token_piece(g_eng, best, piece, sizeof(piece));
		ck_assert_int_gt(pl, 0);
		ck_assert_int_eq(strata_grammar_accept(r, piece, (size_t)pl), 0);
		ck_assert(len + (size_t)pl < 65536);
		memcpy(out + len, piece, (size_t)pl);
		len += (size_t)pl;
	}
	strata_grammar_run_free(r);
	free(logits);
	free(out);
	return NULL;
}

/* The checks of the schemas below, as a validator would make them. */
static void check_person(const cJSON *j, const char *text)
{
	const cJSON *name = cJSON_GetObjectItem(j, "name"), *age = cJSON_GetObjectItem(j, "age");
	const cJSON *tags = cJSON_GetObjectItem(j, "tags"), *t;

	ck_assert_msg(cJSON_IsObject(j) && cJSON_IsString(name) && cJSON_IsNumber(age) &&
		      age->valuedouble == floor(age->valuedouble), "%s", text);
	ck_assert_msg(strlen(name->valuestring) <= 4 * 6, "%s", text); /* 6 characters */
	ck_assert_msg(!tags || (cJSON_IsArray(tags) && cJSON_GetArraySize(tags) <= 2), "%s", text);
	cJSON_ArrayForEach(t, tags)
		ck_assert_msg(cJSON_IsString(t) && (!strcmp(t->valuestring, "a") ||
						     !strcmp(t->valuestring, "b")), "%s", text);
}

START_TEST(random_model_json)
{
	struct strata_grammar *g = compile(
		"{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":6},"
		"\"age\":{\"type\":\"integer\"},\"tags\":{\"type\":\"array\",\"items\":{\"enum\":"
		"[\"a\",\"b\"]},\"maxItems\":2}},\"required\":[\"name\",\"age\"],"
		"\"additionalProperties\":false}");
	int done = 0, runs = tu_tsan() ? 10 : 60;

	for (int i = 0; i < runs; i++) {
		char *text = walk(g, 1000u + (unsigned)i, 400);
		cJSON *j;

		if (!text)
			continue; /* ran past 400 tokens: a reply cut by max_tokens */
		j = cJSON_Parse(text);
		ck_assert_msg(j, "not JSON: %s", text);
		check_person(j, text);
		cJSON_Delete(j);
		free(text);
		done++;
	}
	ck_assert_msg(done >= runs / 2, "only %d of %d walks ended", done, runs);
	printf("random model: %d of %d replies complete, all JSON matching the schema\n", done,
	       runs);
	strata_grammar_free(g);
}
END_TEST

/* A forced call in each format comes back through the reply parser as that call. */
START_TEST(forced_calls)
{
	static const struct {
		enum strata_toolfmt f;
		int sub;
	} fmts[] = {
		{ STRATA_TOOLS_TAGGED, 0 }, { STRATA_TOOLS_TAGGED, 1 }, { STRATA_TOOLS_TAGGED, 2 },
		{ STRATA_TOOLS_MISTRAL, 0 }, { STRATA_TOOLS_MISTRAL, 1 }, { STRATA_TOOLS_LLAMA3, 0 },
	};
	cJSON *tools = cJSON_Parse("[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
				   "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":"
				   "{\"type\":\"string\",\"maxLength\":5},\"days\":{\"type\":"
				   "\"integer\"}},\"required\":[\"city\",\"days\"]}}},{\"type\":"
				   "\"function\",\"function\":{\"name\":\"noop\"}}]");

	for (size_t k = 0; k < sizeof(fmts) / sizeof(fmts[0]); k++) {
		struct strata_grammar *g;
		char why[300];
		int done = 0;

		ck_assert_int_eq(strata_grammar_tools(tools, "get_weather", fmts[k].f, fmts[k].sub, 0,
						      &g, why, sizeof(why)), 0);
		for (unsigned i = 0; i < (tu_tsan() ? 3u : 12u); i++) {
			struct strata_msgparse mp = { .fmt = fmts[k].f, .tools = tools };
			char *text = walk(g, 77u * i + (unsigned)k, 400);
			cJSON *args;

			if (!text)
				continue;
			strata_mp_feed(&mp, text, strlen(text));
			strata_mp_finish(&mp);
			ck_assert_msg(mp.n_calls == 1 && !mp.warning[0], "format %zu: %s", k, text);
			ck_assert_str_eq(mp.calls[0].name, "get_weather");
			args = cJSON_Parse(mp.calls[0].args);
			ck_assert_msg(cJSON_IsString(cJSON_GetObjectItem(args, "city")) &&
				      cJSON_IsNumber(cJSON_GetObjectItem(args, "days")), "%s -> %s", text,
				      mp.calls[0].args);
			cJSON_Delete(args);
			strata_mp_free(&mp);
			free(text);
			done++;
		}
		ck_assert_msg(done > 0, "format %zu: no call finished", k);
		strata_grammar_free(g);
	}
	cJSON_Delete(tools);
}
END_TEST

int main(void)
{
	const char *model = tu_shared("models/stories260K.gguf");
	const char *argv[] = { "strata", "-m", NULL, "-t", "1", "--plugin-dir", STRATA_PLUGIN_DIR };
	Suite *s = suite_create("grammar");
	TCase *tc = tcase_create("grammar");
	SRunner *sr;
	int failed;

	if (!model) {
		printf("SKIP: ../shared/models/stories260K.gguf is absent (its vocabulary makes "
		       "the masks)\n");
		return STRATA_TEST_SKIP;
	}
	argv[2] = model;
	if (strata_engine_create_args(7, (char **)argv, &g_eng) ||
	    strata_vtrie_build(g_eng, NULL, NULL, 0, &g_trie))
		return 1;
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, accept_and_refuse);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, random_model_json);
	tcase_add_test(tc, forced_calls);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	strata_vtrie_free(g_trie);
	strata_engine_free(g_eng);
	return failed ? 1 : 0;
}
