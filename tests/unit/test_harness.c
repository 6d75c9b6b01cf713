/*
 * Tests of the test harness itself (tests/harness/test.h): a secret file
 * made with test_secret_file() is gone after its maker exits, a failed
 * check's exit(1) included (a failing case skips its own cleanup: mutant
 * runs left dozens of secrets in /tmp), while a child forked without exec
 * removes none of its parent's, and a file made later under a removed
 * secret's name is not touched.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness/test.h"

static int exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

/* Child role: make a secret, write its name to argv[0], then fail a
 * check (exit 1 without reaching any cleanup of its own). */
static void make_and_fail(char **argv)
{
	char path[64];
	FILE *f;

	test_secret_file(path, sizeof(path), "/tmp/smart-harness-XXXXXX", "s");
	f = fopen(argv[0], "w");
	CHECK(f != NULL);
	fprintf(f, "%s", path);
	fclose(f);
	CHECK_EQ(1, 2); /* the failure a mutant makes */
}

static void test_failed_case(void)
{
	char out[] = "/tmp/smart-harness-out-XXXXXX", path[64] = { 0 };
	int fd = mkstemp(out), status;
	FILE *f;
	pid_t pid;

	CHECK_GE(fd, 0);
	close(fd);
	pid = test_spawn("make_and_fail", (const char *[]){ out, NULL });
	CHECK_GT(pid, 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	f = fopen(out, "r");
	CHECK(f != NULL);
	CHECK(fgets(path, sizeof(path), f) != NULL);
	fclose(f);
	unlink(out);
	printf("the failed child's secret %s: %s\n", path,
	       exists(path) ? "left" : "removed");
	CHECK(!strncmp(path, "/tmp/smart-harness-", 19));
	CHECK(!exists(path));
}

static void test_forked_child(void)
{
	char path[64];
	int status;
	pid_t pid;

	test_secret_file(path, sizeof(path), "/tmp/smart-harness-XXXXXX", "s");
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		exit(0); /* runs the inherited exit handler */
	CHECK_GT(pid, 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(exists(path)); /* the maker's, not the child's */
	test_secrets_remove();
	CHECK(!exists(path));
}

static void test_name_reused(void)
{
	char path[64];
	int fd;

	test_secret_file(path, sizeof(path), "/tmp/smart-harness-XXXXXX", "s");
	CHECK_EQ(unlink(path), 0);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600); /* someone else's */
	CHECK_GE(fd, 0);
	close(fd);
	test_secrets_remove();
	CHECK(exists(path));
	unlink(path);
}

int main(int argc, char **argv)
{
	static const struct test_child children[] = {
		{ "make_and_fail", make_and_fail },
		{ NULL, NULL },
	};

	return test_main_children(argc, argv,
				  (struct test_case[]){
					  { "failed_case", test_failed_case },
					  { "forked_child", test_forked_child },
					  { "name_reused", test_name_reused },
					  { NULL, NULL } },
				  children);
}
