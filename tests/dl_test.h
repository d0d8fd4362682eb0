/* dl_test.h - shared helpers for the Check suites: a main() that runs one suite. */
#ifndef DL_TEST_H
#define DL_TEST_H

#include <check.h>
#include <stdlib.h>

/* Each tests/test_<module>.c defines `Suite *make_suite(void)` and uses DL_TEST_MAIN. */
#define DL_TEST_MAIN                                                      \
    int main(void)                                                        \
    {                                                                     \
        SRunner *sr = srunner_create(make_suite());                       \
        srunner_run_all(sr, CK_NORMAL);                                   \
        int failed = srunner_ntests_failed(sr);                           \
        srunner_free(sr);                                                 \
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                 \
    }

#endif
