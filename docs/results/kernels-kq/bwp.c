// Read bandwidth: T threads each sum their share of a buffer of N bytes with 256-bit loads, prefetching 4 KiB ahead (as the one-token kernels do),
// repeated R times; prints GB/s of the best repetition.
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static size_t N; static int T; static char *buf; static volatile long long sink;
static pthread_barrier_t bar;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void *run(void *arg){ long id=(long)arg; size_t per=N/T; const __m256i *p=(const __m256i*)(buf+id*per);
  __m256i a=_mm256_setzero_si256(),b=a,c=a,d=a; size_t n=per/32;
  pthread_barrier_wait(&bar);
  for(size_t i=0;i+4<=n;i+=4){_mm_prefetch((const char*)(p+i+128),_MM_HINT_T0);_mm_prefetch((const char*)(p+i+130),_MM_HINT_T0);a=_mm256_add_epi64(a,_mm256_load_si256(p+i));b=_mm256_add_epi64(b,_mm256_load_si256(p+i+1));c=_mm256_add_epi64(c,_mm256_load_si256(p+i+2));d=_mm256_add_epi64(d,_mm256_load_si256(p+i+3));}
  a=_mm256_add_epi64(_mm256_add_epi64(a,b),_mm256_add_epi64(c,d)); long long o[4]; _mm256_storeu_si256((__m256i*)o,a); sink+=o[0]+o[1]+o[2]+o[3];
  pthread_barrier_wait(&bar); return 0;}
int main(int argc,char**argv){ N=(size_t)atoll(argv[1])<<20; T=atoi(argv[2]); int R=atoi(argv[3]);
  buf=aligned_alloc(64,N); memset(buf,1,N); double best=0;
  for(int r=0;r<R;r++){ pthread_t th[16]; pthread_barrier_init(&bar,0,T+1);
    for(long i=0;i<T;i++) pthread_create(&th[i],0,run,(void*)i);
    pthread_barrier_wait(&bar); double t0=now(); pthread_barrier_wait(&bar); double t1=now();
    for(int i=0;i<T;i++) pthread_join(th[i],0); pthread_barrier_destroy(&bar);
    double gbs=N/(t1-t0)/1e9; if(gbs>best)best=gbs; }
  printf("{\"mib\": %zu, \"threads\": %d, \"best_gb_s\": %.1f}\n", N>>20, T, best); return 0;}
