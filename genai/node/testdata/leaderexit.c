// leaderexit maps the model file argv[1], then its leader thread ends
// (pthread_exit) while a second thread lives on: the process is alive,
// its leader a zombie. At a line on stdin the second thread reads a byte
// of each page of the mapping and prints the faults it took (its own, by
// getrusage) and the pages it touched; at the end of stdin it exits,
// ending the process.
#define _GNU_SOURCE // RUSAGE_THREAD
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile const char *model;
static size_t size;

static void *survivor(void *arg)
{
	(void)arg;
	char line[64];
	if (!fgets(line, sizeof(line), stdin))
		exit(1);
	long page = sysconf(_SC_PAGESIZE), pages = 0;
	struct rusage before, after;
	getrusage(RUSAGE_THREAD, &before);
	unsigned sum = 0;
	for (size_t off = 0; off < size; off += page, pages++)
		sum += model[off];
	getrusage(RUSAGE_THREAD, &after);
	printf("%ld %ld %u\n", (after.ru_minflt - before.ru_minflt) + (after.ru_majflt - before.ru_majflt), pages, sum);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: leaderexit MODEL\n");
		return 2;
	}
	int fd = open(argv[1], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(argv[1]);
		return 1;
	}
	size = st.st_size;
	model = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (model == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, survivor, NULL) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	pthread_exit(NULL);
}
