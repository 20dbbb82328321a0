// Gathers through a fixed random permutation of 2^24 f32 on the device: the
// direct gather, the two passes of a staged gather (pass 1 through L2-sized
// blocks of the source, pass 2 the reads back in block order), kernel shapes
// (elements per thread, grid size), scatters through tables grouped by
// destination block, and pass 1 through shared memory. CUDA events, a 256 MiB
// buffer written before each run to evict L2, median of 12 after 3. Results
// in BENCHMARKS.md, "Where the remaining time goes". Build and run on the GPU:
//   nvcc -O3 -arch=sm_90 -std=c++17 scripts/bench/perm-passes.cu -o perm-passes && ./perm-passes
// Microbenchmark: gathers through a fixed permutation, direct and staged, by kernel shape.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <functional>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e){printf("err %s line %d\n",cudaGetErrorString(e),__LINE__); exit(1);} }while(0)

__global__ void g1(float* out, const float* in, const uint32_t* idx, uint64_t n) {
  uint64_t s = uint64_t(gridDim.x)*blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x)*blockDim.x+threadIdx.x; i<n; i+=s) out[i]=in[idx[i]];
}
__global__ void g4(float* out, const float* in, const uint32_t* idx, uint64_t n) {
  uint64_t s = uint64_t(gridDim.x)*blockDim.x; uint64_t n4=n/4;
  for (uint64_t i = uint64_t(blockIdx.x)*blockDim.x+threadIdx.x; i<n4; i+=s) {
    uint4 j = reinterpret_cast<const uint4*>(idx)[i];
    float4 v; v.x=in[j.x]; v.y=in[j.y]; v.z=in[j.z]; v.w=in[j.w];
    reinterpret_cast<float4*>(out)[i]=v;
  }
}
__global__ void g4ld(float* out, const float* in, const uint32_t* idx, uint64_t n) {
  uint64_t s = uint64_t(gridDim.x)*blockDim.x; uint64_t n4=n/4;
  for (uint64_t i = uint64_t(blockIdx.x)*blockDim.x+threadIdx.x; i<n4; i+=s) {
    uint4 j = __ldcs(reinterpret_cast<const uint4*>(idx)+i);
    float4 v; v.x=__ldg(in+j.x); v.y=__ldg(in+j.y); v.z=__ldg(in+j.z); v.w=__ldg(in+j.w);
    __stcs(reinterpret_cast<float4*>(out)+i, v);
  }
}
__global__ void g8(float* out, const float* in, const uint32_t* idx, uint64_t n) {
  uint64_t s = uint64_t(gridDim.x)*blockDim.x; uint64_t n8=n/8;
  for (uint64_t i = uint64_t(blockIdx.x)*blockDim.x+threadIdx.x; i<n8; i+=s) {
    uint4 a = reinterpret_cast<const uint4*>(idx)[2*i], b = reinterpret_cast<const uint4*>(idx)[2*i+1];
    float4 v, w; v.x=in[a.x]; v.y=in[a.y]; v.z=in[a.z]; v.w=in[a.w]; w.x=in[b.x]; w.y=in[b.y]; w.z=in[b.z]; w.w=in[b.w];
    reinterpret_cast<float4*>(out)[2*i]=v; reinterpret_cast<float4*>(out)[2*i+1]=w;
  }
}
__global__ void copy4(float* out, const float* in, uint64_t n) {
  uint64_t s = uint64_t(gridDim.x)*blockDim.x; uint64_t n4=n/4;
  for (uint64_t i = uint64_t(blockIdx.x)*blockDim.x+threadIdx.x; i<n4; i+=s) reinterpret_cast<float4*>(out)[i]=reinterpret_cast<const float4*>(in)[i];
}


// Pass 1 through shared memory: block b of the source (B elements) is loaded
// whole, then its segment of the table reads it there.
template <int B, int T>
__global__ void __launch_bounds__(T) p1smem(float* out, const float* in, const uint32_t* tab, const uint32_t* seg, uint64_t in_len, uint32_t nblocks) {
  __shared__ float tile[B];
  for (uint32_t b = blockIdx.x; b < nblocks; b += gridDim.x) {
    uint64_t base = uint64_t(b) * B;
    uint32_t len = uint32_t(((in_len - base) < uint64_t(B) ? (in_len - base) : uint64_t(B)));
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < len; i += T) tile[i] = in[base + i];
    __syncthreads();
    uint32_t s = seg[b], e = seg[b+1];
    for (uint32_t t = s + threadIdx.x; t < e; t += T) out[t] = tile[tab[t] - base];
  }
}
// Pass 1 over source blocks of `B` elements, each loaded whole into
// `tile4` (four at a time) and read there through its segment of the table.
template <int T>
__device__ void pass1_tiles(float4* tile4, float* out, const float* in, const uint32_t* tab, const uint32_t* seg, uint64_t in_len, uint32_t nblocks, uint32_t B) {
  float* tile = reinterpret_cast<float*>(tile4);
  for (uint32_t b = blockIdx.x; b < nblocks; b += gridDim.x) {
    uint64_t base = uint64_t(b) * B;
    uint32_t len = uint32_t(((in_len - base) < uint64_t(B) ? (in_len - base) : uint64_t(B)));
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < len/4; i += T) tile4[i] = reinterpret_cast<const float4*>(in+base)[i];
    __syncthreads();
    uint32_t s = seg[b], e = seg[b+1];
    for (uint32_t t = s + threadIdx.x; t < e; t += T) out[t] = tile[tab[t] - base];
  }
}
template <int B, int T>
__global__ void __launch_bounds__(T) p1smem4(float* out, const float* in, const uint32_t* tab, const uint32_t* seg, uint64_t in_len, uint32_t nblocks) {
  __shared__ float4 tile4[B/4];
  pass1_tiles<T>(tile4, out, in, tab, seg, in_len, nblocks, B);
}
template <int B, int T> void run_cfg(const char* tag, int sms, uint64_t n, std::vector<uint32_t>& perm, float* x, float* tmp, float* y, uint32_t* dtab, uint32_t* dback, uint32_t* dseg, std::function<float(const char*, std::function<void()>)> timeit, std::function<void(const char*)> check) {
  uint64_t block=B; uint32_t nb = (n+B-1)/B;
  std::vector<uint32_t> start(nb+1,0); for (auto j:perm) start[j/block+1]++; for (size_t b=1;b<start.size();b++) start[b]+=start[b-1];
  std::vector<uint32_t> seg(start); std::vector<uint32_t> byb(n), back(n);
  for (uint64_t i=0;i<n;i++){ auto& s=start[perm[i]/block]; byb[s]=perm[i]; back[i]=s; s++; }
  CK(cudaMemcpy(dtab,byb.data(),n*4,cudaMemcpyHostToDevice)); CK(cudaMemcpy(dback,back.data(),n*4,cudaMemcpyHostToDevice)); CK(cudaMemcpy(dseg,seg.data(),(nb+1)*4,cudaMemcpyHostToDevice));
  int per; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, p1smem<B,T>, T, 0));
  char nm[96];
  sprintf(nm,"%s B=%d T=%d occ=%d pass1 smem",tag,B,T,per); timeit(nm,[&]{ p1smem<B,T><<<std::min<uint32_t>(nb, sms*per),T>>>(tmp,x,dtab,dseg,n,nb);});
  sprintf(nm,"%s B=%d T=%d pass1 smem4",tag,B,T); timeit(nm,[&]{ p1smem4<B,T><<<std::min<uint32_t>(nb, sms*per),T>>>(tmp,x,dtab,dseg,n,nb);});
  sprintf(nm,"%s B=%d T=%d pass1 smem, nb CTAs",tag,B,T); timeit(nm,[&]{ p1smem<B,T><<<nb,T>>>(tmp,x,dtab,dseg,n,nb);});
  sprintf(nm,"%s B=%d pass2 g1",tag,B); timeit(nm,[&]{ g1<<<sms*8,256>>>(y,tmp,dback,n);});
  sprintf(nm,"%s B=%d pass2 g4",tag,B); timeit(nm,[&]{ g4<<<sms*8,256>>>(y,tmp,dback,n);});
  sprintf(nm,"%s B=%d both smem4+g4",tag,B); timeit(nm,[&]{ p1smem4<B,T><<<std::min<uint32_t>(nb, sms*per),T>>>(tmp,x,dtab,dseg,n,nb); g4<<<sms*8,256>>>(y,tmp,dback,n);}); check(nm);
}

template <int T>
__global__ void __launch_bounds__(T) p1dyn(float* out, const float* in, const uint32_t* tab, const uint32_t* seg, uint64_t in_len, uint32_t nblocks, uint32_t B) {
  extern __shared__ float4 dtile4[];
  pass1_tiles<T>(dtile4, out, in, tab, seg, in_len, nblocks, B);
}
template <int T> void run_dyn(uint32_t B, int sms, uint64_t n, std::vector<uint32_t>& perm, float* x, float* tmp, float* y, uint32_t* dtab, uint32_t* dback, uint32_t* dseg, std::function<float(const char*, std::function<void()>)> timeit, std::function<void(const char*)> check) {
  uint64_t block=B; uint32_t nb = (n+B-1)/B;
  std::vector<uint32_t> start(nb+1,0); for (auto j:perm) start[j/block+1]++; for (size_t b=1;b<start.size();b++) start[b]+=start[b-1];
  std::vector<uint32_t> seg(start); std::vector<uint32_t> byb(n), back(n);
  for (uint64_t i=0;i<n;i++){ auto& s=start[perm[i]/block]; byb[s]=perm[i]; back[i]=s; s++; }
  CK(cudaMemcpy(dtab,byb.data(),n*4,cudaMemcpyHostToDevice)); CK(cudaMemcpy(dback,back.data(),n*4,cudaMemcpyHostToDevice)); CK(cudaMemcpy(dseg,seg.data(),(nb+1)*4,cudaMemcpyHostToDevice));
  size_t sm = size_t(B)*4;
  CK(cudaFuncSetAttribute(p1dyn<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sm)));
  int per; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, p1dyn<T>, T, sm));
  char nm[96];
  sprintf(nm,"dyn B=%u T=%d occ=%d pass1",B,T,per); timeit(nm,[&]{ p1dyn<T><<<std::min<uint32_t>(nb, sms*per),T,sm>>>(tmp,x,dtab,dseg,n,nb,B);});
  sprintf(nm,"dyn B=%u pass2 g4",B); timeit(nm,[&]{ g4<<<sms*8,256>>>(y,tmp,dback,n);});
  sprintf(nm,"dyn B=%u pass2 g1",B); timeit(nm,[&]{ g1<<<sms*8,256>>>(y,tmp,dback,n);});
  sprintf(nm,"dyn B=%u both",B); timeit(nm,[&]{ p1dyn<T><<<std::min<uint32_t>(nb, sms*per),T,sm>>>(tmp,x,dtab,dseg,n,nb,B); g4<<<sms*8,256>>>(y,tmp,dback,n);}); check(nm);
}
__global__ void s1(float* out, const float* in, const uint32_t* idx, uint64_t n) {
  uint64_t s = uint64_t(gridDim.x)*blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x)*blockDim.x+threadIdx.x; i<n; i+=s) out[idx[i]]=in[i];
}
__global__ void s4(float* out, const float* in, const uint32_t* idx, uint64_t n) {
  uint64_t s = uint64_t(gridDim.x)*blockDim.x; uint64_t n4=n/4;
  for (uint64_t i = uint64_t(blockIdx.x)*blockDim.x+threadIdx.x; i<n4; i+=s) {
    uint4 j = reinterpret_cast<const uint4*>(idx)[i]; float4 v = reinterpret_cast<const float4*>(in)[i];
    out[j.x]=v.x; out[j.y]=v.y; out[j.z]=v.z; out[j.w]=v.w;
  }
}
static void part_passes() {
  const uint64_t n = 1ull<<24; const uint64_t block = (50ull<<20)/32;
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<uint32_t> perm(n); for (uint64_t i=0;i<n;i++) perm[i]=i;
  uint64_t st=88172645463325252ull; for (uint64_t i=n-1;i>0;i--){ st^=st<<13; st^=st>>7; st^=st<<17; uint64_t j=st%(i+1); std::swap(perm[i],perm[j]); }
  std::vector<uint64_t> start(n/block+2,0); for (auto j:perm) start[j/block+1]++; for (size_t b=1;b<start.size();b++) start[b]+=start[b-1];
  std::vector<uint32_t> byb(n), back(n); for (uint64_t i=0;i<n;i++){ auto& s=start[perm[i]/block]; byb[s]=perm[i]; back[i]=s; s++; }
  uint32_t *dperm,*dbyb,*dback; float *x,*tmp,*y; char* flush; size_t fb=256<<20;
  CK(cudaMalloc(&dperm,n*4)); CK(cudaMalloc(&dbyb,n*4)); CK(cudaMalloc(&dback,n*4));
  CK(cudaMalloc(&x,n*4)); CK(cudaMalloc(&tmp,n*4)); CK(cudaMalloc(&y,n*4)); CK(cudaMalloc(&flush,fb));
  CK(cudaMemcpy(dperm,perm.data(),n*4,cudaMemcpyHostToDevice)); CK(cudaMemcpy(dbyb,byb.data(),n*4,cudaMemcpyHostToDevice)); CK(cudaMemcpy(dback,back.data(),n*4,cudaMemcpyHostToDevice));
  std::vector<float> hx(n); for (uint64_t i=0;i<n;i++) hx[i]=float(i); CK(cudaMemcpy(x,hx.data(),n*4,cudaMemcpyHostToDevice));
  cudaEvent_t a,b; cudaEventCreate(&a); cudaEventCreate(&b);
  auto timeit=[&](const char* name, auto f){ std::vector<float> ms; for(int r=0;r<15;r++){ CK(cudaMemsetAsync(flush,r,fb)); cudaEventRecord(a); f(); cudaEventRecord(b); CK(cudaEventSynchronize(b)); float t; cudaEventElapsedTime(&t,a,b); if(r>=3) ms.push_back(t);} std::sort(ms.begin(),ms.end()); printf("%-40s %.4f ms\n",name,ms[ms.size()/2]); return ms[ms.size()/2]; };
  auto check=[&](const char* name){ std::vector<float> h(n); CK(cudaMemcpy(h.data(),y,n*4,cudaMemcpyDeviceToHost)); for(uint64_t i=0;i<n;i++) if(h[i]!=float(perm[i])){printf("%s WRONG at %lu\n",name,i); return;} };
  int full = sms*8;
  timeit("copy4 (16.7M f32, reference)", [&]{ copy4<<<full,256>>>(y,x,n); });
  for (int mult : {8, 16, 32}) {
    int gr = sms*mult; char nm[64];
    sprintf(nm,"direct g1 grid=%d/SM",mult); timeit(nm,[&]{ g1<<<gr,256>>>(y,x,dperm,n);}); check(nm);
    sprintf(nm,"staged g1 grid=%d/SM",mult); timeit(nm,[&]{ g1<<<gr,256>>>(tmp,x,dbyb,n); g1<<<gr,256>>>(y,tmp,dback,n);}); check(nm);
    sprintf(nm,"  pass1 g1 grid=%d/SM",mult); timeit(nm,[&]{ g1<<<gr,256>>>(tmp,x,dbyb,n);});
    sprintf(nm,"  pass2 g1 grid=%d/SM",mult); timeit(nm,[&]{ g1<<<gr,256>>>(y,tmp,dback,n);});
    sprintf(nm,"direct g4 grid=%d/SM",mult); timeit(nm,[&]{ g4<<<gr,256>>>(y,x,dperm,n);}); check(nm);
    sprintf(nm,"staged g4 grid=%d/SM",mult); timeit(nm,[&]{ g4<<<gr,256>>>(tmp,x,dbyb,n); g4<<<gr,256>>>(y,tmp,dback,n);}); check(nm);
    sprintf(nm,"  pass1 g4 grid=%d/SM",mult); timeit(nm,[&]{ g4<<<gr,256>>>(tmp,x,dbyb,n);});
    sprintf(nm,"  pass2 g4 grid=%d/SM",mult); timeit(nm,[&]{ g4<<<gr,256>>>(y,tmp,dback,n);});
    sprintf(nm,"staged g4ld grid=%d/SM",mult); timeit(nm,[&]{ g4ld<<<gr,256>>>(tmp,x,dbyb,n); g4ld<<<gr,256>>>(y,tmp,dback,n);}); check(nm);
    sprintf(nm,"staged g8 grid=%d/SM",mult); timeit(nm,[&]{ g8<<<gr,256>>>(tmp,x,dbyb,n); g8<<<gr,256>>>(y,tmp,dback,n);}); check(nm);
  }
  { char nm[64]; uint64_t gb=n/256; sprintf(nm,"staged g1 grid=n/256");
    timeit(nm,[&]{ g1<<<gb,256>>>(tmp,x,dbyb,n); g1<<<gb,256>>>(y,tmp,dback,n);}); check(nm);
    sprintf(nm,"staged g4 grid=n/1024"); timeit(nm,[&]{ g4<<<gb/4,256>>>(tmp,x,dbyb,n); g4<<<gb/4,256>>>(y,tmp,dback,n);}); check(nm);
    sprintf(nm,"direct g4 grid=n/1024"); timeit(nm,[&]{ g4<<<gb/4,256>>>(y,x,dperm,n);}); check(nm); }
  // Block size sweep for staged g4.
  for (uint64_t bl : {block/4, block/2, block*2}) {
    std::vector<uint64_t> s2(n/bl+2,0); for (auto j:perm) s2[j/bl+1]++; for (size_t q=1;q<s2.size();q++) s2[q]+=s2[q-1];
    for (uint64_t i=0;i<n;i++){ auto& s=s2[perm[i]/bl]; byb[s]=perm[i]; back[i]=s; s++; }
    CK(cudaMemcpy(dbyb,byb.data(),n*4,cudaMemcpyHostToDevice)); CK(cudaMemcpy(dback,back.data(),n*4,cudaMemcpyHostToDevice));
    char nm[64]; sprintf(nm,"staged g4 block=%lu",bl); timeit(nm,[&]{ g4<<<full,256>>>(tmp,x,dbyb,n); g4<<<full,256>>>(y,tmp,dback,n);}); check(nm);
    sprintf(nm,"staged g1 block=%lu",bl); timeit(nm,[&]{ g1<<<full,256>>>(tmp,x,dbyb,n); g1<<<full,256>>>(y,tmp,dback,n);}); check(nm);
  }
}
static void part_scatter() {
  const uint64_t n = 1ull<<24;
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<uint32_t> perm(n); for (uint64_t i=0;i<n;i++) perm[i]=i;
  uint64_t st=88172645463325252ull; for (uint64_t i=n-1;i>0;i--){ st^=st<<13; st^=st>>7; st^=st<<17; uint64_t j=st%(i+1); std::swap(perm[i],perm[j]); }
  std::vector<uint32_t> inv(n); for (uint64_t i=0;i<n;i++) inv[perm[i]]=i;
  uint32_t *ds; float *x,*tmp,*y; char* flush; size_t fb=256<<20;
  CK(cudaMalloc(&ds,n*4)); CK(cudaMalloc(&x,n*4)); CK(cudaMalloc(&tmp,n*4)); CK(cudaMalloc(&y,n*4)); CK(cudaMalloc(&flush,fb));
  std::vector<float> hx(n); for (uint64_t i=0;i<n;i++) hx[i]=float(i); CK(cudaMemcpy(x,hx.data(),n*4,cudaMemcpyHostToDevice));
  cudaEvent_t a,b; cudaEventCreate(&a); cudaEventCreate(&b);
  auto timeit=[&](const char* name, auto f){ std::vector<float> ms; for(int r=0;r<15;r++){ CK(cudaMemsetAsync(flush,r,fb)); cudaEventRecord(a); f(); cudaEventRecord(b); CK(cudaEventSynchronize(b)); float t; cudaEventElapsedTime(&t,a,b); if(r>=3) ms.push_back(t);} std::sort(ms.begin(),ms.end()); printf("%-44s %.4f ms\n",name,ms[ms.size()/2]); return ms[ms.size()/2]; };
  for (uint64_t bd : {4096ull, 16384ull, 65536ull, 262144ull, 1638400ull}) {
    std::vector<uint64_t> start(n/bd+2,0); for (uint64_t nw=0;nw<n;nw++) start[nw/bd+1]++; for (size_t q=1;q<start.size();q++) start[q]+=start[q-1];
    std::vector<uint32_t> sv(n); for (uint64_t old=0; old<n; old++){ sv[old]=start[inv[old]/bd]++; }
    CK(cudaMemcpy(ds,sv.data(),n*4,cudaMemcpyHostToDevice));
    char nm[80];
    for (int mult: {8, 32}) {
      sprintf(nm,"scatter s1 bd=%lu grid=%d/SM",bd,mult); timeit(nm,[&]{ s1<<<sms*mult,256>>>(tmp,x,ds,n);});
      sprintf(nm,"scatter s4 bd=%lu grid=%d/SM",bd,mult); timeit(nm,[&]{ s4<<<sms*mult,256>>>(tmp,x,ds,n);});
      sprintf(nm,"gather g1 bd=%lu grid=%d/SM",bd,mult); timeit(nm,[&]{ g1<<<sms*mult,256>>>(y,tmp,ds,n);});
      sprintf(nm,"gather g4 bd=%lu grid=%d/SM",bd,mult); timeit(nm,[&]{ g4<<<sms*mult,256>>>(y,tmp,ds,n);});
    }
    std::vector<float> h(n); CK(cudaMemcpy(h.data(),y,n*4,cudaMemcpyDeviceToHost)); for(uint64_t i=0;i<n;i++) if(h[i]!=float(i)){printf("WRONG at %lu\n",i);break;}
    // tmp must be ordered by (new block, old): tmp[q] for q in segment d are x[old] ascending
  }
}
static void part_shared() {
  const uint64_t n = 1ull<<24;
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<uint32_t> perm(n); for (uint64_t i=0;i<n;i++) perm[i]=i;
  uint64_t st=88172645463325252ull; for (uint64_t i=n-1;i>0;i--){ st^=st<<13; st^=st>>7; st^=st<<17; uint64_t j=st%(i+1); std::swap(perm[i],perm[j]); }
  uint32_t *dtab,*dback,*dseg; float *x,*tmp,*y; char* flush; size_t fb=256<<20;
  CK(cudaMalloc(&dtab,n*4)); CK(cudaMalloc(&dback,n*4)); CK(cudaMalloc(&dseg,(n/1024+2)*4));
  CK(cudaMalloc(&x,n*4)); CK(cudaMalloc(&tmp,n*4)); CK(cudaMalloc(&y,n*4)); CK(cudaMalloc(&flush,fb));
  std::vector<float> hx(n); for (uint64_t i=0;i<n;i++) hx[i]=float(i); CK(cudaMemcpy(x,hx.data(),n*4,cudaMemcpyHostToDevice));
  cudaEvent_t a,b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::function<float(const char*, std::function<void()>)> timeit=[&](const char* name, std::function<void()> f){ std::vector<float> ms; for(int r=0;r<15;r++){ CK(cudaMemsetAsync(flush,r,fb)); cudaEventRecord(a); f(); cudaEventRecord(b); CK(cudaEventSynchronize(b)); CK(cudaGetLastError()); float t; cudaEventElapsedTime(&t,a,b); if(r>=3) ms.push_back(t);} std::sort(ms.begin(),ms.end()); printf("%-52s %.4f ms\n",name,ms[ms.size()/2]); return ms[ms.size()/2]; };
  std::function<void(const char*)> check=[&](const char* name){ std::vector<float> h(n); CK(cudaMemcpy(h.data(),y,n*4,cudaMemcpyDeviceToHost)); for(uint64_t i=0;i<n;i++) if(h[i]!=float(perm[i])){printf("%s WRONG at %lu\n",name,i); return;} };
  run_cfg<4096,256>("a",sms,n,perm,x,tmp,y,dtab,dback,dseg,timeit,check);
  run_cfg<8192,256>("a",sms,n,perm,x,tmp,y,dtab,dback,dseg,timeit,check);
  run_cfg<8192,512>("a",sms,n,perm,x,tmp,y,dtab,dback,dseg,timeit,check);
  run_cfg<12288,512>("a",sms,n,perm,x,tmp,y,dtab,dback,dseg,timeit,check);
  run_dyn<512>(16384,sms,n,perm,x,tmp,y,dtab,dback,dseg,timeit,check);
  run_dyn<1024>(16384,sms,n,perm,x,tmp,y,dtab,dback,dseg,timeit,check);
  run_dyn<1024>(24576,sms,n,perm,x,tmp,y,dtab,dback,dseg,timeit,check);
  run_dyn<1024>(32768,sms,n,perm,x,tmp,y,dtab,dback,dseg,timeit,check);
  run_dyn<1024>(49152,sms,n,perm,x,tmp,y,dtab,dback,dseg,timeit,check);
}

int main() {
  part_passes();
  part_scatter();
  part_shared();
  return 0;
}
