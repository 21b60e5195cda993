/* nc.h -- negative controls (tests/negative/run, make negative-controls):
 * a safety mechanism removed, to prove its test fails without it.  Only a
 * build made for that (-DRI_NC_RUNTIME) can switch one off, by the
 * environment (RI_NC=RI_NC_FOO, one flag); in every other build RI_NC(x)
 * is the constant 0 and the compiler drops the branch. */
#ifndef RI_NC_H
#define RI_NC_H

#ifdef RI_NC_RUNTIME
int ri_nc_on(const char *flag);
#define RI_NC(flag) ri_nc_on(#flag)
#else
#define RI_NC(flag) 0
#endif

#endif
